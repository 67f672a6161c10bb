# SPDX-License-Identifier: Apache-2.0
"""Per-output class weights on a `tf.data.Dataset`, a generator or a `PyDataset`.

Keras 2 (training_utils.py `standardize_sample_or_class_weights` and
`standardize_weights`, 2.2.4 to 2.3.1) took `class_weight` per output, as a
list in output order or a dict by output name, with `fit_generator` as with
arrays: each batch's rows were weighted by the class of their target in each
output (the argmax of a one-hot row, else the label rounded), and an output's
own sample weights, where a batch had them, won over its class weights.
Keras 3 takes class weights for one output only. `sample_weights.py` turns
them into sample weights for arrays; here each batch of a dataset or Python
data gets the same per-row weights as it is read (nothing is read ahead).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from parallel_keras.data_parallel import sample_weights


def with_class_weights(model: Any, x: Any, kwargs: dict) -> tuple[Any, dict]:
    """`(x, kwargs)` of a `fit` call, per-output class weights put into the
    batches of a dataset, generator or `PyDataset` as sample weights.

    Other data and other class weights are returned as they are.
    """
    names = list(getattr(model, "output_names", None) or [])
    class_weight = kwargs.get("class_weight")
    if len(names) < 2 or not sample_weights.per_output(class_weight, names):
        return x, kwargs
    per_output = sample_weights.by_output(class_weight, names) or []
    if isinstance(x, tf.data.Dataset):
        x = _dataset_with_weights(x, names, per_output)
    elif isinstance(x, keras.utils.PyDataset):
        x = _WeightedPyDataset(x, names, per_output)
    elif isinstance(x, types.GeneratorType):
        x = _generator_with_weights(x, names, per_output)
    else:
        return x, kwargs
    kwargs = dict(kwargs)
    kwargs["class_weight"] = None
    return x, kwargs


def _unpacked(element: Any) -> tuple[Any, Any, Any] | None:
    if not isinstance(element, tuple) or len(element) not in (2, 3):
        return None
    return element if len(element) == 3 else (*element, None)


def _numpy_weights(names, per_output, targets, given):
    """Each output's weights for a batch of NumPy targets, as Keras 2's."""
    flat_targets = sample_weights.by_output(targets, names)
    if flat_targets is None:
        raise ValueError(
            "Class weights per output weigh each output's targets, so a batch "
            f"needs one target per output {names}. Received: targets of type "
            f"{type(targets).__name__}. Yield a list (in output order) or a "
            "dict by output name as the targets."
        )
    given = sample_weights.by_output(given, names) or [None] * len(names)
    weights = []
    for name, target, weight, classes in zip(names, flat_targets, given, per_output):
        if weight is None and classes is not None and target is not None:
            weight = sample_weights.class_weighted(name, np.asarray(target), classes)
        if weight is None and target is not None:
            weight = np.ones(len(np.asarray(target)), "float32")
        weights.append(weight)
    if isinstance(targets, Mapping):
        return {name: weight for name, weight in zip(names, weights) if weight is not None}
    return tuple(weights)


def _weighted_element(names, per_output, element):
    unpacked = _unpacked(element)
    if unpacked is None or unpacked[1] is None:
        return element
    x, y, given = unpacked
    return x, y, _numpy_weights(names, per_output, y, given)


def _generator_with_weights(generator, names, per_output):
    for element in generator:
        yield _weighted_element(names, per_output, element)


class _WeightedPyDataset(keras.utils.PyDataset):
    """A `PyDataset` whose batches carry the per-output class weights."""

    def __init__(self, data: keras.utils.PyDataset, names, per_output):
        super().__init__(
            workers=data.workers,
            use_multiprocessing=data.use_multiprocessing,
            max_queue_size=data.max_queue_size,
        )
        self._data, self._names, self._per_output = data, names, per_output

    def __len__(self) -> int:
        return len(self._data)

    @property
    def num_batches(self):
        return self._data.num_batches

    def __getitem__(self, index):
        return _weighted_element(self._names, self._per_output, self._data[index])

    def on_epoch_begin(self) -> None:
        self._data.on_epoch_begin()

    def on_epoch_end(self) -> None:
        self._data.on_epoch_end()


def _dataset_with_weights(dataset: tf.data.Dataset, names, per_output) -> tf.data.Dataset:
    tables = [
        None if classes is None else _weight_table(name, classes)
        for name, classes in zip(names, per_output)
    ]

    def add_weights(*element):
        if len(element) != 2:
            return element  # sample weights given: Keras 2 used them
        x, y = element
        flat_targets = sample_weights.by_output(y, names)
        if flat_targets is None:
            return element
        weights = [
            _ones(target) if table is None else _class_weighted_tensor(target, table)
            for target, table in zip(flat_targets, tables)
        ]
        if isinstance(y, Mapping):
            return x, y, {name: weight for name, weight in zip(names, weights)}
        return x, y, tuple(weights)

    return dataset.map(add_weights)


def _weight_table(name: str, classes: Mapping) -> tuple[tf.Tensor, str]:
    """One weight per class 0..max as a vector, -1 for a class left out."""
    keys = [int(key) for key in classes]
    table = np.full(max(keys) + 1, -1.0, "float32")
    for key, value in classes.items():
        table[int(key)] = float(value)
    message = (
        "A class weight gives every class in its output's targets a weight. "
        f"Received: class_weight for output {name!r} with classes {sorted(keys)}, "
        "and a batch with a class it leaves out. Add it to its class weight "
        "(1.0 weighs a row as without one)."
    )
    return tf.constant(table), message


def _ones(target):
    return tf.ones(tf.shape(target)[:1], "float32")


def _class_weighted_tensor(target, table):
    vector, message = table
    labels = tf.convert_to_tensor(target)
    if labels.shape.rank and labels.shape.rank > 1 and labels.shape[-1] and labels.shape[-1] > 1:
        labels = tf.argmax(labels, axis=-1)
    else:
        labels = tf.reshape(labels, [tf.shape(labels)[0], -1])[:, 0]
        labels = tf.round(tf.cast(labels, "float32"))
    labels = tf.cast(labels, "int64")
    size = tf.cast(tf.shape(vector)[0], "int64")
    inside = tf.logical_and(labels >= 0, labels < size)
    weights = tf.gather(vector, tf.where(inside, labels, tf.zeros_like(labels)))
    known = tf.logical_and(inside, weights >= 0)
    with tf.control_dependencies([tf.debugging.Assert(tf.reduce_all(known), [message])]):
        return tf.identity(weights)
