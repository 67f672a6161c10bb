# SPDX-License-Identifier: Apache-2.0
"""Keras 2's reading of compile and call arguments on the parallel model.

Keras 2.2.4 and 2.3.1 (engine/training.py, training_utils.py) read them as
asserted here; every value is compared with the template compiled and
called the Keras 3 way on one device.
"""

from __future__ import annotations

import warnings

import helpers
import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras

ATOL = 1e-5
GPUS = [2, 4]


def two_outputs(seed=5):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh", name="hidden")(inputs)
    first = keras.layers.Dense(1, activation="sigmoid", name="dense_1")(hidden)
    second = keras.layers.Dense(1, activation="sigmoid", name="dense_2")(hidden)
    return keras.Model(inputs, [first, second])


def one_output(seed=6):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(inputs))


def data(rows=10, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(rows, 3).astype("float32")
    first = rng.randint(0, 2, (rows, 1)).astype("float32")
    second = rng.randint(0, 2, (rows, 1)).astype("float32")
    return x, first, second


def weight_difference(a, b):
    return max(float(np.abs(u - v).max()) for u, v in zip(a.get_weights(), b.get_weights()))


@pytest.mark.parametrize("gpus", GPUS)
def test_one_loss_applies_to_every_output_with_its_weights(gpus):
    x, first, second = data()
    reference = two_outputs()
    reference.compile(keras.optimizers.SGD(0.5), ["mse", "mse"], loss_weights=[1.0, 0.5])
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "mse", loss_weights=[1.0, 0.5])

    expected = [reference.train_on_batch(x, [first, second]) for _ in range(2)]
    got = [parallel.train_on_batch(x, [first, second]) for _ in range(2)]

    np.testing.assert_allclose(got, expected, atol=ATOL)
    assert parallel.metrics_names == ["loss", "dense_1_loss", "dense_2_loss"]
    loss, first_loss, second_loss = got[-1]
    assert abs(loss - (first_loss + 0.5 * second_loss)) < ATOL
    assert weight_difference(template, reference) < ATOL


@pytest.mark.parametrize("gpus", GPUS)
@pytest.mark.parametrize(
    "arguments, received",
    [
        ({"loss": "mse", "loss_weights": [0.5]}, "loss_weights=[0.5], 1 entries"),
        ({"loss": ["mse", "mse", "mae"]}, "loss=['mse', 'mse', 'mae'], 3 entries"),
        ({"loss": ["mse"]}, "loss=['mse'], 1 entries"),
    ],
)
def test_lists_not_one_entry_per_output_are_refused_at_compile(gpus, arguments, received):
    parallel = parallel_keras.multi_gpu_model(two_outputs(), gpus=gpus)
    with pytest.raises(ValueError, match="one entry per model output") as error:
        parallel.compile("rmsprop", **arguments)
    assert received in str(error.value)
    assert "The model has 2 outputs ['dense_1', 'dense_2']" in str(error.value)
    assert not parallel.compiled


@pytest.mark.slow
@pytest.mark.parametrize("gpus", GPUS)
def test_a_flat_metric_list_goes_to_every_output_under_keras2_names(gpus):
    x, first, second = data(rows=12)
    reference = two_outputs()
    reference.compile(
        keras.optimizers.SGD(0.5),
        ["binary_crossentropy", "mse"],
        metrics=[["acc", keras.metrics.MeanAbsoluteError(name="mae")] for _ in range(2)],
    )
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(
        keras.optimizers.SGD(0.5),
        ["binary_crossentropy", "mse"],
        metrics=["acc", keras.metrics.MeanAbsoluteError(name="mae")],
    )

    expected = reference.fit(
        x,
        [first, second],
        batch_size=4,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=(x, [first, second]),
    ).history
    history = parallel.fit(
        x,
        [first, second],
        batch_size=4,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=(x, [first, second]),
    ).history

    assert parallel.metrics_names == [
        "loss", "dense_1_loss", "dense_2_loss",
        "dense_1_acc", "dense_1_mae", "dense_2_acc", "dense_2_mae",
    ]  # fmt: skip
    assert sorted(history) == sorted(expected)
    assert "val_dense_2_acc" in history
    for name, values in expected.items():
        np.testing.assert_allclose(history[name], values, atol=ATOL, err_msg=name)
    # Each output's MeanAbsoluteError kept its own state.
    assert history["dense_1_mae"] != history["dense_2_mae"]


@pytest.mark.slow
@pytest.mark.parametrize("gpus", GPUS)
def test_lists_of_numbers_are_one_array_as_in_keras2(gpus):
    x, first, _ = data(rows=6)
    labels = [int(value) for value in first[:, 0]]
    weights = [1.0, 2.0, 0.5, 1.0, 3, np.float32(0.25)]
    reference = one_output()
    reference.compile(keras.optimizers.SGD(0.5), "binary_crossentropy", metrics=["acc"])
    template = one_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "binary_crossentropy", metrics=["acc"])

    as_arrays = np.asarray(labels), np.asarray(weights, "float32")
    expected = [
        reference.train_on_batch(x, *as_arrays),
        reference.evaluate(x, as_arrays[0], sample_weight=as_arrays[1], verbose=0),
        reference.fit(x, as_arrays[0], sample_weight=as_arrays[1], batch_size=3, epochs=1,
                      shuffle=False, verbose=0, validation_data=(x, as_arrays[0])).history,
    ]  # fmt: skip
    got = [
        parallel.train_on_batch(x, labels, weights),
        parallel.evaluate(x, labels, sample_weight=weights, verbose=0),
        parallel.fit(x, labels, sample_weight=weights, batch_size=3, epochs=1,
                     shuffle=False, verbose=0, validation_data=(x, labels)).history,
    ]  # fmt: skip

    np.testing.assert_allclose(got[0], expected[0], atol=ATOL)
    np.testing.assert_allclose(got[1], expected[1], atol=ATOL)
    for name, values in expected[2].items():
        np.testing.assert_allclose(got[2][name], values, atol=ATOL, err_msg=name)
    assert weight_difference(template, reference) < ATOL
    np.testing.assert_allclose(
        parallel.test_on_batch(x, labels), reference.test_on_batch(x, as_arrays[0]), atol=ATOL
    )


@pytest.mark.parametrize("gpus", GPUS)
def test_lists_of_numbers_per_output_are_arrays(gpus):
    x, first, second = data(rows=8)
    targets = [[float(v) for v in first[:, 0]], [int(v) for v in second[:, 0]]]
    reference = two_outputs()
    reference.compile(keras.optimizers.SGD(0.5), ["mse", "binary_crossentropy"])
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), ["mse", "binary_crossentropy"])

    expected = reference.train_on_batch(x, [np.asarray(t, "float32") for t in targets])
    got = parallel.train_on_batch(x, targets)

    np.testing.assert_allclose(got, expected, atol=ATOL)
    assert weight_difference(template, reference) < ATOL


@pytest.mark.parametrize("gpus", GPUS)
@pytest.mark.parametrize("element", ["bare", "tuple_of_x", "x_and_y"])
def test_predict_reads_a_generator_of_bare_inputs_as_keras2_predict_generator(gpus, element):
    x, first, _ = data(rows=12)
    template = one_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    read = []

    def batches():
        for start in range(0, 12, 4):
            read.append(start)
            rows = x[start : start + 4]
            yield {"bare": rows, "tuple_of_x": (rows,), "x_and_y": (rows, first[start:])}[element]

    predictions = parallel.predict(batches(), steps=3, verbose=0)

    np.testing.assert_allclose(predictions, template.predict(x, verbose=0), atol=ATOL)
    assert read == [0, 4, 8]


@pytest.mark.parametrize("gpus", GPUS)
def test_summary_warns_of_trainable_weights_changed_since_compile(gpus):
    x, first, _ = data(rows=8)
    template = one_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "mse")
    lines = []
    with warnings.catch_warnings(record=True) as before:
        warnings.simplefilter("always")
        parallel.summary(print_fn=lines.append)
    template.trainable = False
    with warnings.catch_warnings(record=True) as after:
        warnings.simplefilter("always")
        parallel.summary(print_fn=lines.append)
        parallel.summary(print_fn=lines.append)
        parallel.fit(x, first, batch_size=4, verbose=0)

    assert not [w for w in before if "Discrepancy" in str(w.message)]
    discrepancies = [w for w in after if "Discrepancy" in str(w.message)]
    assert len(discrepancies) == 3  # each summary, and the first train call
    assert lines  # the template's summary was still printed


@pytest.mark.parametrize("gpus", GPUS)
def test_a_sequential_template_reads_lists_of_numbers_too(gpus):
    # A Sequential model built from an Input has `outputs` but no `output`.
    def sequential():
        keras.utils.set_random_seed(7)
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])

    x = data(rows=2)[0]
    reference = sequential()
    reference.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
    template = sequential()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")

    got = parallel.train_on_batch(x, [0, 1])

    np.testing.assert_allclose(got, reference.train_on_batch(x, np.array([0, 1])), atol=ATOL)
    assert weight_difference(template, reference) < ATOL


def _fed(spelling, value):
    """One output's data in a Keras 2 spelling for a model fed only `dense_1`."""
    return {"dict": {"dense_1": value}, "list": [value], "array": value}[spelling]


@pytest.mark.slow
@pytest.mark.parametrize("gpus", GPUS)
@pytest.mark.parametrize(
    "loss", [{"dense_1": "mse"}, ["mse", None]], ids=["loss_dict", "loss_list"]
)
@pytest.mark.parametrize("spelling", ["dict", "list", "array"])
def test_an_output_without_a_loss_takes_no_targets_and_no_metrics(gpus, loss, spelling):
    # Keras 2: `dense_2` has no loss, so it takes no targets, sample weights
    # or metrics, though `metrics=['mae']` names every output. One device
    # in Keras 3's spelling: a None loss and an empty metric list for it.
    x, first, second = data()
    weights = np.linspace(0.5, 2.0, len(x)).astype("float32")
    reference = two_outputs()
    reference.compile(keras.optimizers.Adam(0.05), ["mse", None], metrics=[["mae"], []])
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.Adam(0.05), loss, metrics=["mae"])
    targets = _fed(spelling, first)

    # A Python generator or tf.data yields a list of targets as a tuple.
    def dataset(y):
        y = tuple(y) if isinstance(y, list) else y
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(4)

    def batches(y):
        y = tuple(y) if isinstance(y, list) else y
        while True:
            yield x[:5], tree_slice(y, slice(0, 5))

    def run(model, y, sample_weight):
        return [
            helpers.one_device_on_batch(model, "train_on_batch", x, y, sample_weight),
            helpers.one_device_on_batch(model, "test_on_batch", x, y),
            model.fit(
                x,
                y,
                batch_size=4,
                epochs=2,
                shuffle=False,
                verbose=0,
                sample_weight=sample_weight,
                validation_data=(x, y),
            ).history,
            model.fit(dataset(y), epochs=1, verbose=0).history,
            model.evaluate(x, y, batch_size=4, verbose=0),
            model.evaluate(batches(y), steps=2, verbose=0),
            model.predict(x, batch_size=4, verbose=0),
        ]

    expected = run(reference, [first, second], weights)
    got = run(parallel, targets, _fed(spelling, weights))

    for index, (value, reference_value) in enumerate(zip(got, expected)):
        if isinstance(reference_value, dict):
            assert sorted(value) == sorted(reference_value), index
            for name in reference_value:
                np.testing.assert_allclose(
                    value[name], reference_value[name], atol=ATOL, err_msg=f"{index} {name}"
                )
        else:
            np.testing.assert_allclose(value, reference_value, atol=ATOL, err_msg=str(index))
    assert weight_difference(template, reference) < ATOL


def tree_slice(value, rows):
    return keras.tree.map_structure(lambda array: array[rows], value)


CLASS_WEIGHTS = {"dense_1": {0: 1.0, 1: 3.0}, "dense_2": {0: 2.0, 1: 0.5}}


class LabelBatches(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        rows = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[rows], tuple(target[rows] for target in self.y)


@pytest.mark.slow
@pytest.mark.parametrize("gpus", GPUS)
@pytest.mark.parametrize(
    "kind, spelling",
    [("dataset", "dict"), ("generator", "list"), ("pydataset", "dict"), ("dataset", "list")],
)
def test_class_weights_per_output_weigh_batches_of_datasets_and_python_data(gpus, kind, spelling):
    # Keras 2's fit_generator(class_weight=[...] or {output: ...}): each
    # row weighted by its class in each output. One device: those weights,
    # computed here, given as per-output sample weights.
    x, first, second = data(rows=12)
    targets = (first, second)
    class_weight = (
        CLASS_WEIGHTS
        if spelling == "dict"
        else [CLASS_WEIGHTS["dense_1"], CLASS_WEIGHTS["dense_2"]]
    )
    row_weights = tuple(
        np.array([CLASS_WEIGHTS[name][int(label)] for label in target[:, 0]], "float32")
        for name, target in zip(["dense_1", "dense_2"], targets)
    )
    reference = two_outputs()
    reference.compile(keras.optimizers.SGD(0.5), ["binary_crossentropy"] * 2, metrics=[["acc"]] * 2)
    expected = reference.fit(
        tf.data.Dataset.from_tensor_slices((x, targets, row_weights)).batch(4),
        epochs=2,
        verbose=0,
    ).history

    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "binary_crossentropy", metrics=["acc"])
    if kind == "dataset":
        history = parallel.fit(
            tf.data.Dataset.from_tensor_slices((x, targets)).batch(4),
            epochs=2,
            class_weight=class_weight,
            verbose=0,
        ).history
    elif kind == "generator":

        def batches():
            while True:
                for start in range(0, 12, 4):
                    yield x[start : start + 4], tuple(t[start : start + 4] for t in targets)

        history = parallel.fit(
            batches(), steps_per_epoch=3, epochs=2, class_weight=class_weight, verbose=0
        ).history
    else:
        history = parallel.fit(
            LabelBatches(x, targets, 4),
            epochs=2,
            shuffle=False,
            class_weight=class_weight,
            verbose=0,
        ).history

    for name, values in expected.items():
        np.testing.assert_allclose(history[name], values, atol=ATOL, err_msg=name)
    assert weight_difference(template, reference) < ATOL


@pytest.mark.parametrize("gpus", GPUS)
def test_a_class_left_out_of_a_per_output_class_weight_is_refused_for_a_generator(gpus):
    x, first, second = data(rows=8)
    parallel = parallel_keras.multi_gpu_model(two_outputs(), gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
    before = parallel.get_weights()

    def batches():
        while True:
            yield x, (first, second)

    with pytest.raises(ValueError, match=r"output 'dense_2' with classes \[0\]"):
        parallel.fit(
            batches(),
            steps_per_epoch=1,
            class_weight={"dense_1": {0: 1.0, 1: 2.0}, "dense_2": {0: 1.0}},
            verbose=0,
        )
    for got, expected in zip(parallel.get_weights(), before):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("gpus", GPUS)
def test_a_list_of_sample_weights_goes_with_a_tuple_of_targets(gpus):
    # Keras 2 read targets and sample weights as lists, whatever sequence
    # held them; Keras 3 refuses a list of weights for a tuple of targets.
    x, first, second = data(rows=8)
    weights = [np.linspace(0.5, 2.0, 8).astype("float32"), np.ones(8, "float32")]
    reference = two_outputs()
    reference.compile(keras.optimizers.SGD(0.5), ["binary_crossentropy"] * 2)
    with pytest.raises(ValueError, match="structures did not match"):
        reference.fit(x, (first, second), sample_weight=weights, verbose=0)
    expected = reference.fit(
        x, (first, second), sample_weight=tuple(weights), batch_size=4, shuffle=False, verbose=0
    ).history
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
    history = parallel.fit(
        x, (first, second), sample_weight=weights, batch_size=4, shuffle=False, verbose=0
    ).history
    np.testing.assert_allclose(history["loss"], expected["loss"], atol=ATOL)
    assert weight_difference(template, reference) < ATOL
