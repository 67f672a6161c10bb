# SPDX-License-Identifier: Apache-2.0
"""Keras 2 generators and Sequences whose batches hold lists, on the parallel model.

keras-retinanet's generators yield `(images, [regression, classification])`;
plain Keras 3 refuses the inner list (`output_signature must contain objects
that are subclass of tf.TypeSpec`). The parallel model reads it as tf.keras 2
did; every value is compared with the template trained on one device on the
same batches with tuples.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import compat
from parallel_keras.data_parallel import list_batches

ATOL = 1e-5
ROWS, BATCH = 8, 4


def two_inputs_two_outputs(seed=3):
    keras.utils.set_random_seed(seed)
    left, right = keras.Input((3,)), keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh")(keras.layers.concatenate([left, right]))
    first = keras.layers.Dense(2, name="first")(hidden)
    second = keras.layers.Dense(1, activation="sigmoid", name="second")(hidden)
    return keras.Model([left, right], [first, second])


def arrays():
    rng = np.random.RandomState(0)
    left, right = rng.rand(ROWS, 3).astype("float32"), rng.rand(ROWS, 3).astype("float32")
    first = rng.rand(ROWS, 2).astype("float32")
    second = rng.randint(0, 2, (ROWS, 1)).astype("float32")
    return left, right, first, second


def list_batch(index, data=None):
    """Batch `index` as a Keras 2 script yields it: inputs and targets in lists."""
    left, right, first, second = data or arrays()
    rows = slice(index * BATCH, (index + 1) * BATCH)
    return [left[rows], right[rows]], [first[rows], second[rows]]


class Keras2Sequence(keras.utils.Sequence):
    """A Keras 2 Sequence: no `super().__init__()`, lists in its batches."""

    def __init__(self):
        self.data = arrays()

    def __len__(self):
        return ROWS // BATCH

    def __getitem__(self, index):
        return list_batch(index, self.data)


def endless_generator():
    while True:
        for index in range(ROWS // BATCH):
            yield list_batch(index)


def compiled(model):
    model.compile(keras.optimizers.SGD(0.1), ["mse", "binary_crossentropy"])
    return model


def one_device_reference():
    reference = compiled(two_inputs_two_outputs())
    for _ in range(2):  # two epochs of two batches, with tuples
        for index in range(ROWS // BATCH):
            inputs, targets = list_batch(index)
            reference.train_on_batch(tuple(inputs), tuple(targets))
    return reference


def test_every_list_in_a_batch_becomes_a_tuple_dicts_and_arrays_kept():
    array = np.zeros(2)
    batch = ([array, [array, array]], {"out": [array]})

    converted = list_batches.as_tuples(batch)

    assert converted == ((array, (array, array)), {"out": (array,)})
    assert converted[0][0] is array
    assert list_batches.keras2_batches(array) is array


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.parametrize("kind", ["sequence", "generator"])
def test_fit_on_batches_of_lists_trains_as_one_device_on_tuples(gpus, kind):
    reference = one_device_reference()
    template = two_inputs_two_outputs()
    parallel = compiled(parallel_keras.multi_gpu_model(template, gpus=gpus))

    if kind == "sequence":
        history = parallel.fit(Keras2Sequence(), epochs=2, shuffle=False, verbose=0)
    else:
        history = parallel.fit(endless_generator(), steps_per_epoch=2, epochs=2, verbose=0)

    assert len(history.history["loss"]) == 2
    for got, expected in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.slow
def test_evaluate_and_predict_read_batches_of_lists():
    template = two_inputs_two_outputs()
    parallel = compiled(parallel_keras.multi_gpu_model(template, gpus=2))
    reference = compiled(two_inputs_two_outputs())
    left, right, first, second = arrays()

    got = parallel.evaluate(Keras2Sequence(), verbose=0)
    expected = reference.evaluate((left, right), (first, second), batch_size=BATCH, verbose=0)
    predicted = parallel.predict(
        (inputs for inputs, _ in (list_batch(i) for i in range(2))), steps=2, verbose=0
    )

    np.testing.assert_allclose(got, expected, atol=ATOL)
    np.testing.assert_allclose(
        predicted[0], template.predict((left, right), verbose=0)[0], atol=ATOL
    )


class Keras2Inputs(keras.utils.Sequence):
    """A Keras 2 Sequence for `predict_generator`: each batch the list of inputs."""

    def __init__(self):
        super().__init__()
        self.data = arrays()

    def __len__(self):
        return ROWS // BATCH

    def __getitem__(self, index):
        return list_batch(index, self.data)[0]


@pytest.mark.slow
def test_predict_reads_a_sequences_list_batch_as_the_inputs_as_keras2_did():
    # Keras 2's predict_generator: a batch that is not a tuple is the inputs;
    # Keras 3 reads a list batch as (x, y).
    template = two_inputs_two_outputs()
    parallel = compiled(parallel_keras.multi_gpu_model(template, gpus=2))
    left, right, _, _ = arrays()

    predicted = parallel.predict(Keras2Inputs(), verbose=0)

    expected = template.predict((left, right), verbose=0)
    assert len(predicted) == 2
    for got, want in zip(predicted, expected):
        np.testing.assert_allclose(got, want, atol=ATOL)


def test_compat_list_batches_reads_predicts_bare_list_as_the_inputs():
    left, right, _, _ = arrays()
    batches = compat.list_batches(Keras2Inputs(), inputs_only=True)
    batch = batches[0]
    assert isinstance(batches, keras.utils.PyDataset) and len(batches) == 2
    assert len(batch) == 1 and isinstance(batch[0], tuple)
    np.testing.assert_array_equal(batch[0][1], right[:BATCH])
    generator = compat.list_batches(list_batch(index) for index in range(2))
    inputs, targets = next(generator)
    assert isinstance(inputs, tuple) and isinstance(targets, tuple)
    np.testing.assert_array_equal(inputs[0], left[:BATCH])
