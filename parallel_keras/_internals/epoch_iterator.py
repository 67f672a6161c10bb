# SPDX-License-Identifier: Apache-2.0
"""Keras's epoch iterator over Python data (generators, `PyDataset`).

Upstream surface: Keras 3 `TFEpochIterator` (backend/tensorflow/trainer.py:
`__init__`, `_distributed_dataset`, `_get_iterator` from 3.8) and the data
adapters `GeneratorDataAdapter` / `PyDatasetAdapter`
(trainers/data_adapters/); TensorFlow's `_PrefetchDataset`
(data/ops/prefetch_op.py, TF 2.21). Checked on Keras 3.5.0 and 3.15.1.
Canaries: `tests/internals/test_epoch_iterator.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from parallel_keras._internals import interceptions, multi_step

# --- Python data read one batch per step ------------------------------------
#
# Keras 3's `TFEpochIterator.__init__` (backend/tensorflow/trainer.py) makes
# `_distributed_dataset`, the strategy's distributed dataset over its data
# adapter's `get_tf_dataset()` (trainers/data_adapters/), and every epoch or
# evaluation iterates `iter(self._distributed_dataset)` (Keras 3.15.1 through
# `_get_iterator()`; 3.5.0 directly). For a Python generator
# (`GeneratorDataAdapter`) or a `PyDataset` (`PyDatasetAdapter`) that
# dataset calls the user's Python code. One device iterates it as it is;
# tf.distribute's iterator reads global batches ahead into every device's
# buffer, so a generator is read more often than on one device, a
# `PyDataset`'s `on_epoch_end` comes after batches of the next pass were
# read, and the next iterator over a generator (Keras 3.15 makes one per
# evaluation and its adapter re-yields the 2 batches it peeked at,
# `peek_and_restore`; on 3.5 one stream) starts elsewhere in the stream.
# `read_python_data_per_step` gives such an iterator another iterable in
# `_distributed_dataset`. Checked on Keras 3.5.0 and 3.15.1.

_EPOCH_ITERATOR_SOURCES: list[Callable[[Any], Any]] = []


def steps_take_python_iterators() -> bool:
    """Whether Keras's train/test functions run the steps of a plain Python
    iterator one by one (Keras 3.7+: `_make_function`'s `function` calls
    `one_step_on_data` per batch for an iterator that is not a tf.data or
    distributed one; checked 3.15.1). Keras 3.5-3.6 trace `next(iterator)`
    into a `tf.function`, where a Python iterator is read once, at tracing
    (checked 3.5.0): there Python data keeps tf.distribute's pipeline."""
    return multi_step.stops_at_data_end()


def is_python_data(iterator: Any) -> bool:
    """Whether a Keras epoch iterator reads a Python generator or a `PyDataset`."""
    from keras.src.trainers.data_adapters import generator_data_adapter, py_dataset_adapter

    return isinstance(
        getattr(iterator, "data_adapter", None),
        (generator_data_adapter.GeneratorDataAdapter, py_dataset_adapter.PyDatasetAdapter),
    )


def epoch_iterator_dataset(iterator: Any) -> tf.data.Dataset:
    """The dataset a Keras epoch iterator's adapter makes, without the
    `prefetch(AUTOTUNE)` both adapters end with (a `PyDataset` without
    workers; with workers, Keras's enqueuer reads ahead, on one device too).

    One device's prefetch reads a batch ahead at a moment that depends on
    timing (before or after a `PyDataset`'s `on_epoch_end`, seen both ways
    on one machine); without it a batch is read when its step runs. The
    prefetch is TensorFlow's `_PrefetchDataset` over `_input_dataset`
    (data/ops/prefetch_op.py, checked on TF 2.21).
    """
    from tensorflow.python.data.ops import prefetch_op

    dataset = iterator.data_adapter.get_tf_dataset()
    if isinstance(dataset, prefetch_op._PrefetchDataset):
        dataset = dataset._input_dataset
    return dataset


def epoch_iterator_strategy(iterator: Any) -> tf.distribute.Strategy | None:
    return getattr(iterator, "_distribute_strategy", None)


def read_python_data_per_step(source: Callable[[Any], Any]) -> None:
    """Once: a new `TFEpochIterator` iterates `source(iterator)` where that is not None.

    `source` is called when Keras makes the iterator (in `fit`, `evaluate`,
    `predict`); it returns an iterable (with an `element_spec`) to iterate
    instead of the strategy's distributed dataset, or None to keep that.
    """
    if _EPOCH_ITERATOR_SOURCES:
        _EPOCH_ITERATOR_SOURCES[:] = [source]
        return
    from keras.src.backend.tensorflow import trainer

    _EPOCH_ITERATOR_SOURCES.append(source)
    original = trainer.TFEpochIterator.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        replacement = _EPOCH_ITERATOR_SOURCES[0](self)
        if replacement is not None:
            self._distributed_dataset = replacement

    interceptions.patch(
        trainer.TFEpochIterator,
        "__init__",
        __init__,
        by=__name__,
        when="at the first fit/evaluate/predict of a ParallelModel",
        why="A new TFEpochIterator reads Python data one batch per step instead of "
        "the strategy's distributed dataset.",
    )
