# SPDX-License-Identifier: Apache-2.0
"""Keras 2 batches holding lists: `(x, [y1, y2])` from a generator or `Sequence`.

A Keras 2 generator or `keras.utils.Sequence` for a model with several
inputs or outputs yields them as lists: `(image, [regression,
classification])` (keras-retinanet's generators), `([left, right], y)`.
Keras 2 read them as they were, and tf.keras 2 turned every list in a batch
into a tuple before its `tf.data` pipeline (`nest.list_to_tuple`). Keras 3
(TensorFlow backend; checked on 3.15) turns only the outer list into a tuple, and
`tf.data.Dataset.from_generator` refuses the inner one: `TypeError:
output_signature must contain objects that are subclass of tf.TypeSpec but
found <class 'list'>`. Here each batch is read as tf.keras 2 read it, lazily
(one batch per batch read): every list in it becomes a tuple, so a list of
targets still meets the model's outputs in order. Dicts and arrays are kept.
`parallel_keras.compat.list_batches` gives a plain Keras 3 model the same
reading (migrate passes a script's data through it where it cannot turn the
lists into tuples itself).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import keras


def as_tuples(batch: Any) -> Any:
    """`batch` with every list in it (at any depth, also in dicts) a tuple."""
    if isinstance(batch, (list, tuple)):
        return tuple(as_tuples(part) for part in batch)
    if isinstance(batch, dict):
        return {key: as_tuples(value) for key, value in batch.items()}
    return batch


def _holds_list(batch: Any) -> bool:
    if isinstance(batch, list):
        return True
    if isinstance(batch, tuple):
        return any(_holds_list(part) for part in batch)
    if isinstance(batch, dict):
        return any(_holds_list(value) for value in batch.values())
    return False


def _keras2_batch(batch: Any) -> Any:
    return as_tuples(batch) if _holds_list(batch) else batch


def _keras2_input_batch(batch: Any) -> Any:
    """A batch as Keras 2's `predict_generator` read it: a tuple is `(x, ...)`, else `x`."""
    return _keras2_batch(batch) if isinstance(batch, tuple) else (as_tuples(batch),)


def keras2_batches(data: Any, inputs_only: bool = False) -> Any:
    """`data` whose batches are read with their lists as tuples, as tf.keras 2 read them.

    A Python generator becomes a generator, a `keras.utils.PyDataset`
    (`Sequence`) a `PyDataset` of the same length, workers and epoch hooks;
    anything else (arrays, `tf.data` datasets) is returned as it is. With
    `inputs_only` (`predict`), a batch that is not a tuple is the inputs, as
    Keras 2 read it (`[x1, x2]`: both inputs), not `(x, y)` as Keras 3 would.
    """
    read = _keras2_input_batch if inputs_only else _keras2_batch
    if isinstance(data, keras.utils.PyDataset) and not isinstance(data, _TupleBatches):
        return _TupleBatches(data, read)
    if isinstance(data, types.GeneratorType):
        return _tuple_generator(data, read)
    return data


def _tuple_generator(generator: Iterator, read: Callable[[Any], Any]) -> Iterator:
    for batch in generator:
        yield read(batch)


class _TupleBatches(keras.utils.PyDataset):
    """A `PyDataset` whose batches have tuples where the user's had lists."""

    def __init__(self, data: keras.utils.PyDataset, read: Callable[[Any], Any] = _keras2_batch):
        super().__init__(
            workers=data.workers,
            use_multiprocessing=data.use_multiprocessing,
            max_queue_size=data.max_queue_size,
        )
        self._data = data
        self._read = read

    def __len__(self) -> int:
        return len(self._data)

    @property
    def num_batches(self):
        return self._data.num_batches

    def __getitem__(self, index):
        return self._read(self._data[index])

    def on_epoch_begin(self) -> None:
        self._data.on_epoch_begin()

    def on_epoch_end(self) -> None:
        self._data.on_epoch_end()
