# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.epoch_iterator` (Keras 3.5 to 3.15)."""

import inspect

import numpy as np
import tensorflow as tf
from keras.src.backend.tensorflow import trainer as keras_tf_trainer

from parallel_keras._internals import epoch_iterator


def test_epoch_iterators_iterate_their_distributed_dataset_over_the_adapters():
    """`read_python_data_per_step` replaces `TFEpochIterator._distributed_dataset`
    after `__init__`: every epoch must iterate that attribute, made from its
    data adapter's `get_tf_dataset()`; the Python adapters end with a
    `_PrefetchDataset` (removed by `epoch_iterator_dataset`), and Keras's
    generator adapter re-yields the batches it peeked at."""
    from keras.src.trainers.data_adapters import generator_data_adapter

    init = inspect.getsource(keras_tf_trainer.TFEpochIterator.__init__)
    assert "self._distributed_dataset = dataset" in init
    if "get_tf_dataset()" not in init:  # Keras 3.5: through _get_iterator(), called here.
        assert "dataset = self._get_iterator()" in init
        getter = inspect.getsource(keras_tf_trainer.TFEpochIterator._get_iterator)
        assert "get_tf_dataset()" in getter
    iterating = inspect.getsource(keras_tf_trainer.TFEpochIterator)
    assert "self._distributed_dataset" in iterating.split("def _get_iterator", 1)[-1]

    def batches():
        for index in range(4):
            yield np.full((2, 1), index, "float32"), np.zeros((2, 1), "float32")

    iterator = keras_tf_trainer.TFEpochIterator(
        x=batches(), distribute_strategy=tf.distribute.get_strategy()
    )
    assert epoch_iterator.is_python_data(iterator)
    dataset = iterator.data_adapter.get_tf_dataset()
    assert type(dataset).__name__ == "_PrefetchDataset"
    assert type(epoch_iterator.epoch_iterator_dataset(iterator)).__name__ != "_PrefetchDataset"
    # Each new iterator starts again with the 2 batches peeked at (Keras
    # 3.15: `generator` is a function); Keras 3.5 kept one stream.
    adapter = generator_data_adapter.GeneratorDataAdapter(batches())
    first = [int(x[0, 0]) for x, _ in adapter.get_tf_dataset()]
    again = [int(x[0, 0]) for x, _ in adapter.get_tf_dataset()]
    assert first == [0, 1, 2, 3]
    assert again == ([0, 1] if callable(adapter.generator) else [])


def test_steps_take_their_batches_from_a_python_iterator_one_by_one():
    """`python_data` hands Keras's train/test functions a plain Python
    iterator. Keras 3.7+ runs one step per batch taken from it in a `zip`;
    3.5-3.6 trace `next(iterator)` (read once), where it is not used."""
    if not epoch_iterator.steps_take_python_iterators():
        source = inspect.getsource(keras_tf_trainer.TensorFlowTrainer.make_train_function)
        assert "data = next(iterator)" in source
        return
    source = inspect.getsource(keras_tf_trainer.TensorFlowTrainer._make_function)
    assert "tf.data.Iterator, tf.distribute.DistributedIterator" in source
    assert "zip(range(self.steps_per_execution),iterator)" in "".join(source.split())
