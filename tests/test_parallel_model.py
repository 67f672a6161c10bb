# SPDX-License-Identifier: Apache-2.0
"""The parallel model stands in for Keras 2's where legacy scripts touch it.

Every check compares with the template compiled the same way on one device.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import (
    assert_multi_step_error,
    keras_has_multi_step_at_data_end,
    one_device_on_batch,
)

import parallel_keras
from parallel_keras import testing

ATOL = 1e-5


def max_weight_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights()))


def two_input_two_output(seed=3):
    """Inputs `a`, `b`; outputs `score` (regression) and `label` (3 classes)."""
    keras.utils.set_random_seed(seed)
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    h = keras.layers.Concatenate()([keras.layers.Dense(5, activation="tanh")(a), b])
    score = keras.layers.Dense(1, name="score")(h)
    label = keras.layers.Dense(3, activation="softmax", name="label")(h)
    return keras.Model([a, b], [score, label], name="two_io")


def siamese(seed=4):
    """Outputs named ['add', 'nested', 'nested']: a nested model called twice."""
    keras.utils.set_random_seed(seed)
    nested = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, activation="tanh")], name="nested"
    )
    x1 = keras.Input((3,))
    x2 = keras.Input((3,))
    y1, y2 = nested(x1), nested(x2)
    return keras.Model([x1, x2], [keras.layers.Add(name="add")([y1, y2]), y1, y2])


def two_io_data(rows=24, seed=0):
    rng = np.random.RandomState(seed)
    a = rng.rand(rows, 4).astype("float32")
    b = rng.rand(rows, 3).astype("float32")
    score = rng.rand(rows, 1).astype("float32")
    label = keras.utils.to_categorical(rng.randint(0, 3, rows), 3).astype("float32")
    return a, b, score, label


# --- What scripts read -----------------------------------------------------------


def test_inputs_outputs_and_names_are_the_templates():
    template = two_input_two_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    assert parallel.inputs == template.inputs
    assert parallel.outputs == template.outputs
    assert parallel.input_names == ["a", "b"]
    assert parallel.output_names == ["score", "label"]
    assert [tuple(t.shape) for t in parallel.inputs] == [(None, 4), (None, 3)]
    assert parallel.layers[-3] is template
    assert parallel.get_layer("two_io") is template
    assert parallel.get_layer("score") is template.get_layer("score")


@pytest.mark.parametrize("gpus", [2, 3])
@pytest.mark.parametrize(
    "build, inputs, outputs",
    [
        (lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]), 1, 1),
        (two_input_two_output, 2, 2),
        (siamese, 2, 3),
    ],
)
def test_layers_sit_at_keras_2_positions(gpus, build, inputs, outputs):
    """Keras 2 (multi_gpu_utils.py, 2.3) listed inputs, per-replica slices
    (replica-major), the template, then one merge layer per output."""
    template = build()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    layers = parallel.layers
    assert len(layers) == inputs + inputs * gpus + 1 + outputs
    assert layers[-(len(parallel.outputs) + 1)] is template
    assert layers[inputs + inputs * gpus] is template
    if inputs == 1:
        assert layers[gpus + 1] is template
    if outputs == 1:
        assert layers[-2] is template
    assert all(isinstance(layer, keras.layers.InputLayer) for layer in layers[:inputs])
    assert [layer.name for layer in layers[-outputs:]] == parallel.output_names
    rows = np.arange(10.0, dtype="float32").reshape(5, 2)
    slices = [np.asarray(layers[inputs + replica * inputs](rows)) for replica in range(gpus)]
    np.testing.assert_array_equal(np.concatenate(slices), rows)  # Keras 2's get_slice
    np.testing.assert_array_equal(np.asarray(layers[-1]([rows[:2], rows[2:]])), rows)
    # Only the template holds weights; summary and saving are the template's.
    assert [id(v) for v in parallel.weights] == [id(v) for v in template.weights]
    assert parallel.get_layer(template.name) is template


def test_repeated_output_names_are_numbered_as_keras_2_did():
    template = siamese()
    assert template.output_names == ["add", "nested", "nested"]
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    assert parallel.output_names == ["add", "nested_1", "nested_2"]


def test_subclassed_template_has_no_symbolic_inputs():
    class Tiny(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    template = Tiny()
    template(np.zeros((1, 3), "float32"))
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    with pytest.raises(AttributeError, match="functional API"):
        parallel.inputs  # noqa: B018  (the attribute read is what raises)
    assert not hasattr(parallel, "output_names")


# --- Per-output losses, weights and metrics ----------------------------------------------


COMPILE_FORMS = {
    "dict": dict(
        loss={"score": "mse", "label": "categorical_crossentropy"},
        loss_weights={"score": 0.3, "label": 1.7},
        metrics={"label": ["accuracy"], "score": ["mae"]},
    ),
    "list": dict(
        loss=["mse", "categorical_crossentropy"],
        loss_weights=[0.3, 1.7],
        metrics=[["mae"], ["accuracy"]],
    ),
}


@pytest.mark.parametrize("form", sorted(COMPILE_FORMS))
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_per_output_losses_train_like_one_device(form, gpus):
    a, b, score, label = two_io_data()
    rng = np.random.RandomState(5)
    # Keras 3 takes per-output targets and sample weights of a model with a
    # list of outputs as lists in output order (losses may be keyed by name).
    weights = [rng.rand(24).astype("float32"), rng.rand(24).astype("float32")]
    targets = [score, label]

    reference = two_input_two_output()
    # The list form: what the dict means by output name (Keras 2, Keras
    # 3.7+). Keras 3.5 pairs a loss dict with list outputs in sorted key
    # order, training `label` on the mse; the parallel model reads it by name.
    reference.compile(keras.optimizers.Adam(0.01), **COMPILE_FORMS["list"])
    expected = reference.fit(
        [a, b],
        targets,
        sample_weight=weights,
        batch_size=10,
        epochs=2,
        shuffle=False,
        verbose=0,
    ).history

    template = two_input_two_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.Adam(0.01), **COMPILE_FORMS[form])
    history = parallel.fit(
        [a, b],
        targets,
        sample_weight=weights,
        batch_size=10,
        epochs=2,
        shuffle=False,
        verbose=0,
    ).history

    assert max_weight_difference(reference, template) < ATOL
    assert sorted(history) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-4, err_msg=name)
    # Names pair with the values evaluate returns, as in Keras 2.
    scores = parallel.evaluate([a, b], targets, batch_size=8, verbose=0)
    by_name = parallel.evaluate([a, b], targets, batch_size=8, verbose=0, return_dict=True)
    assert sorted(parallel.metrics_names) == sorted(by_name)
    for name, score in zip(parallel.metrics_names, scores):
        np.testing.assert_allclose(score, by_name[name], atol=1e-6, err_msg=name)
    # Batches of 8 split evenly on 2 and 4 replicas; of 7, unevenly (Keras
    # alone would count a replica of 1 row like one of 3 in the per-output
    # losses); of 6, leave a replica empty on 4 and go whole to every replica.
    for batch_size in (8, 7, 6):
        results = parallel.evaluate(
            [a, b], targets, batch_size=batch_size, verbose=0, return_dict=True
        )
        expected = reference.evaluate(
            [a, b], targets, batch_size=batch_size, verbose=0, return_dict=True
        )
        for name in expected:
            np.testing.assert_allclose(results[name], expected[name], atol=1e-4, err_msg=name)


def test_metrics_names_pair_with_the_values_returned_as_in_keras_2():
    """The legacy idiom `print(model.metrics_names[1], scores[1])` names the
    metric (Keras 3's own list says 'compile_metrics', keras-team/keras#21487)."""
    rng = np.random.RandomState(3)
    x = rng.rand(12, 4).astype("float32")
    y = keras.utils.to_categorical(rng.randint(0, 3, 12), 3)
    keras.utils.set_random_seed(1)
    template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile("sgd", "categorical_crossentropy", metrics=["accuracy", "mae"])
    assert parallel.metrics_names == ["loss", "compile_metrics"]  # Not built yet.
    scores = parallel.evaluate(x, y, batch_size=6, verbose=0)
    assert parallel.metrics_names == ["loss", "accuracy", "mae"]
    by_name = parallel.evaluate(x, y, batch_size=6, verbose=0, return_dict=True)
    np.testing.assert_allclose(scores, [by_name[name] for name in parallel.metrics_names])
    logs = parallel.train_on_batch(x[:6], y[:6])
    assert len(logs) == len(parallel.metrics_names)


def test_class_weight_trains_like_one_device():
    rng = np.random.RandomState(2)
    x = rng.rand(20, 4).astype("float32")
    y = rng.randint(0, 3, 20)
    class_weight = {0: 0.5, 1: 2.0, 2: 1.0}

    def build():
        keras.utils.set_random_seed(8)
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])

    reference = build()
    reference.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    reference.fit(x, y, class_weight=class_weight, batch_size=8, shuffle=False, verbose=0)
    template = build()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    parallel.fit(x, y, class_weight=class_weight, batch_size=8, shuffle=False, verbose=0)
    assert max_weight_difference(reference, template) < ATOL

    reference_logs = one_device_on_batch(
        reference, "train_on_batch", x[:6], y[:6], class_weight=class_weight
    )
    logs = parallel.train_on_batch(x[:6], y[:6], class_weight=class_weight)
    np.testing.assert_allclose(logs, reference_logs, atol=ATOL)
    assert max_weight_difference(reference, template) < ATOL


# --- Every input structure, every method --------------------------------------------------


def _inputs(structure, a, b):
    return {"list": [a, b], "tuple": (a, b), "dict": {"a": a, "b": b}}[structure]


@pytest.mark.parametrize("structure", ["list", "tuple", "dict"])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_input_structures_in_every_method(structure):
    a, b, score, label = two_io_data(rows=10)
    x = _inputs(structure, a, b)
    targets = [score, label]
    reference = two_input_two_output()
    reference.compile(keras.optimizers.SGD(0.1), ["mse", "categorical_crossentropy"])
    template = two_input_two_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.1), ["mse", "categorical_crossentropy"])

    def same(got, expected):
        for g, e in zip(tf.nest.flatten(got), tf.nest.flatten(expected)):
            np.testing.assert_allclose(g, e, atol=ATOL)

    same(parallel.predict_on_batch(x), reference.predict_on_batch(x))
    same(parallel.predict(x, batch_size=3, verbose=0), reference.predict(x, verbose=0))
    same(
        parallel.test_on_batch(x, targets),
        one_device_on_batch(reference, "test_on_batch", x, targets),
    )
    same(
        parallel.train_on_batch(x, targets),
        one_device_on_batch(reference, "train_on_batch", x, targets),
    )
    assert max_weight_difference(reference, template) < ATOL
    same(
        parallel.evaluate(x, targets, batch_size=3, verbose=0),
        reference.evaluate(x, targets, batch_size=3, verbose=0),
    )
    parallel.fit(x, targets, batch_size=6, shuffle=False, verbose=0)
    reference.fit(x, targets, batch_size=6, shuffle=False, verbose=0)
    assert max_weight_difference(reference, template) < ATOL


class _Batches(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x[0]) // self.batch_size)

    def __getitem__(self, index):
        rows = slice(index * self.batch_size, (index + 1) * self.batch_size)
        x = tf.nest.map_structure(lambda v: v[rows], self.x)
        if self.y is None:
            return (x,)
        return x, tf.nest.map_structure(lambda v: v[rows], self.y)


@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_tf_data_trains_and_predicts_like_one_device():
    a, b, score, label = two_io_data(rows=22)
    x, y = (a, b), (score, label)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    inputs = tf.data.Dataset.from_tensor_slices((x,)).batch(8)
    reference = two_input_two_output()
    reference.compile(keras.optimizers.SGD(0.1), ["mse", "categorical_crossentropy"])
    template = two_input_two_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.1), ["mse", "categorical_crossentropy"])
    parallel.fit(data, epochs=2, verbose=0)
    reference.fit(data, epochs=2, verbose=0)
    assert max_weight_difference(reference, template) < ATOL
    # 22 rows in batches of 8: the last batch (6 rows) would leave a replica empty.
    for got, expected in zip(
        parallel.predict(inputs, verbose=0), reference.predict(inputs, verbose=0)
    ):
        np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.subprocess
def test_pydataset_trains_and_predicts_like_one_device():
    # In a fresh process, one epoch: after an earlier PyDataset `fit` in the
    # same process, or across an epoch boundary, a PyDataset `fit` under a
    # strategy sometimes trains on other batches (TF 2.21 / Keras 3.15; seen
    # with a native MirroredStrategy too, not yet understood).
    process = testing.run_python(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import parallel_keras
        parallel_keras.simulate_devices(4)
        import keras, numpy as np, tensorflow as tf
        from test_parallel_model import _Batches, two_input_two_output, two_io_data
        a, b, score, label = two_io_data(rows=22)
        x, y = (a, b), (score, label)
        losses = ["mse", "categorical_crossentropy"]
        reference = two_input_two_output()
        reference.compile(keras.optimizers.SGD(0.1), losses)
        reference.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8), epochs=1, verbose=0)
        template = two_input_two_output()
        parallel = parallel_keras.multi_gpu_model(template, gpus=4)
        parallel.compile(keras.optimizers.SGD(0.1), losses)
        parallel.fit(_Batches(x, y, 8), epochs=1, shuffle=False, verbose=0)
        print(max(float(np.abs(p - q).max())
                  for p, q in zip(reference.get_weights(), template.get_weights())))
        got = parallel.predict(_Batches(x, None, 8), verbose=0)
        expected = reference.predict(tf.data.Dataset.from_tensor_slices((x,)).batch(8), verbose=0)
        print(max(float(np.abs(p - q).max()) for p, q in zip(got, expected)))
        """
    )
    weights, predictions = map(float, process.stdout.split()[-2:])
    assert weights < ATOL
    assert predictions < ATOL


# --- The template keeps working ---------------------------------------------------


def conv_bn(seed=6):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            keras.layers.Conv2D(4, 3),
            keras.layers.BatchNormalization(),
            keras.layers.Flatten(),
            keras.layers.Dense(2),
        ],
        name="conv_bn",
    )


@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_template_methods_return_what_they_returned_before_wrapping():
    rng = np.random.RandomState(7)
    x = rng.rand(13, 6, 6, 2).astype("float32")
    y = rng.rand(13, 2).astype("float32")
    reference, template = conv_bn(), conv_bn()
    for model in (reference, template):
        model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    parallel_keras.multi_gpu_model(template, gpus=4)

    np.testing.assert_allclose(
        template.predict_on_batch(x), reference.predict_on_batch(x), atol=ATOL
    )
    assert template.predict_on_batch(x[:1]).shape == (1, 2)
    np.testing.assert_allclose(
        template.predict(x, batch_size=5, verbose=0),
        reference.predict(x, batch_size=5, verbose=0),
        atol=ATOL,
    )
    np.testing.assert_allclose(
        template.train_on_batch(x[:5], y[:5]),
        one_device_on_batch(reference, "train_on_batch", x[:5], y[:5]),
        atol=ATOL,
    )
    np.testing.assert_allclose(
        template.test_on_batch(x, y),
        one_device_on_batch(reference, "test_on_batch", x, y),
        atol=ATOL,
    )
    # Plain BatchNormalization: each batch normalized over all its rows, as on
    # one device (every replica computes the template's whole batch).
    history = template.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0).history
    expected = reference.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0).history
    assert max_weight_difference(reference, template) < ATOL
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-4)
    np.testing.assert_allclose(
        template.evaluate(x, y, batch_size=4, verbose=0),
        reference.evaluate(x, y, batch_size=4, verbose=0),
        atol=1e-4,
    )


def _mlp(seed=1):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="small")


@pytest.mark.parametrize("rows", [32, 36])  # 4 batches of 8; 5, the last of 4.
def test_steps_per_execution_trains_like_one_device(rows):
    # MirroredStrategy's default ring all-reduce on CPU devices fails here
    # (InvalidArgumentError at while/cond, TF 2.21); the CPU reduction chosen
    # by multi_gpu_model runs inside Keras's multi-step loop.
    x = np.random.RandomState(3).rand(rows, 4).astype("float32")
    y = np.random.RandomState(4).rand(rows, 2).astype("float32")
    template = _mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.1), "mse", steps_per_execution=2)
    if rows % 16 and not keras_has_multi_step_at_data_end():
        # Keras 3.5-3.6 run past an epoch of 5 batches in steps of 2.
        before = template.get_weights()
        with pytest.raises(RuntimeError) as raised:
            parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
        assert_multi_step_error(str(raised.value), steps=2, batches=5)
        assert max(float(np.abs(a - b).max()) for a, b in zip(before, template.get_weights())) == 0
        return
    reference = _mlp()
    reference.compile(keras.optimizers.SGD(0.1), "mse", steps_per_execution=2)
    reference.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    assert max_weight_difference(reference, template) < ATOL


def test_an_endless_dataset_with_a_step_count_runs_that_many_steps():
    import parallel_keras
    from parallel_keras.testing import legacy_files

    rows = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    targets = np.zeros((8, 3), "float32")
    parallel = parallel_keras.multi_gpu_model(legacy_files.sequential_template(), gpus=2)
    parallel.compile("sgd", "mse")
    endless = tf.data.Dataset.from_tensor_slices((rows, targets)).batch(4).repeat()
    history = parallel.fit(endless, epochs=2, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 2
    assert parallel.predict(endless.map(lambda x, y: x), steps=3, verbose=0).shape == (12, 3)
    # Positionally too (keras.Model.predict(x, batch_size, verbose, steps)).
    assert parallel.predict(endless.map(lambda x, y: x), None, 0, 2).shape == (8, 3)


# --- Targets, weights and metric names as Keras 2 took them --------------------


def ctc_like(seed=6):
    """The CTC idiom: the loss is computed inside the model, output `ctc`."""
    keras.utils.set_random_seed(seed)
    features = keras.Input((4,), name="features")
    labels = keras.Input((1,), name="labels")
    prediction = keras.layers.Dense(1)(features)
    per_row = keras.layers.Lambda(lambda t: keras.ops.square(t[0] - t[1]), name="ctc")(
        [prediction, labels]
    )
    return keras.Model({"features": features, "labels": labels}, per_row)


def ctc_batches(by_name, steps=3, rows=8):
    rng = np.random.default_rng(1)
    for _ in range(steps):
        inputs = {
            "features": rng.normal(size=(rows, 4)).astype("float32"),
            "labels": rng.normal(size=(rows, 1)).astype("float32"),
        }
        weights = rng.random(rows).astype("float32")
        zeros = np.zeros((rows, 1))
        if by_name:
            yield inputs, {"ctc": zeros}, {"ctc": weights}
        else:
            yield inputs, zeros, weights


def test_single_output_targets_and_weights_by_output_name_as_keras_2():
    """Keras 2 read `{'ctc': zeros}` by output name for a one-output model."""

    def passthrough(y_true, y_pred):
        return y_pred

    reference = ctc_like()
    reference.compile(optimizer=keras.optimizers.SGD(0.1), loss=passthrough)
    expected = reference.fit(
        _cycle(ctc_batches, by_name=False), steps_per_epoch=3, epochs=2, verbose=0
    ).history
    template = ctc_like()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.SGD(0.1), loss={"ctc": passthrough})
    history = parallel.fit(
        _cycle(ctc_batches, by_name=True), steps_per_epoch=3, epochs=2, verbose=0
    ).history
    assert max_weight_difference(template, reference) < ATOL
    np.testing.assert_allclose(history["loss"], expected["loss"], atol=ATOL)
    inputs, zeros, weights = next(ctc_batches(by_name=True))
    np.testing.assert_allclose(
        parallel.test_on_batch(inputs, zeros, weights),
        one_device_on_batch(reference, "test_on_batch", inputs, np.zeros((8, 1)), weights["ctc"]),
        atol=ATOL,
    )


def _cycle(batches, **kwargs):
    while True:
        yield from batches(**kwargs)


def survival_model(seed=8):
    """Outputs as a list: `Survival` (regression) and `aux` (3 classes)."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,))
    h = keras.layers.Dense(5, activation="tanh")(inputs)
    return keras.Model(
        inputs,
        [
            keras.layers.Dense(1, name="Survival")(h),
            keras.layers.Dense(3, activation="softmax", name="aux")(h),
        ],
    )


def Cindex(y_true, y_pred):  # noqa: N802  (the capitalized name legacy scripts use)
    """A batch-coupled metric: the share of concordant pairs."""
    order = keras.ops.sign(y_true - keras.ops.transpose(y_true))
    predicted = keras.ops.sign(y_pred - keras.ops.transpose(y_pred))
    return keras.ops.mean(keras.ops.cast(order * predicted > 0, "float32"))


def test_dict_targets_weights_on_list_outputs_float64_and_keras2_metric_names(tmp_path):
    """keras-team/keras#20992, float64 targets, and `{val_Survival_Cindex}`."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(24, 4)).astype("float32")
    survival = rng.normal(size=(24, 1))  # float64, as NumPy makes it
    labels = rng.integers(0, 3, size=(24, 1))  # int64 labels, sparse loss
    weights = rng.random(24)
    seen = set()

    def dtype_of_targets(y_true, y_pred):
        seen.add(y_true.dtype.name)
        return keras.ops.mean(y_pred)

    losses = {"Survival": "mse", "aux": "sparse_categorical_crossentropy"}
    reference = survival_model()
    reference.compile(
        optimizer=keras.optimizers.SGD(0.1), loss=losses, metrics={"Survival": [Cindex]}
    )
    expected = reference.fit(
        x,
        [survival.astype("float32"), labels.astype("float32")],
        sample_weight=[weights.astype("float32"), np.ones(24, "float32")],
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=(x, [survival.astype("float32"), labels.astype("float32")]),
    ).history

    template = survival_model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=losses,
        metrics={"Survival": [Cindex, dtype_of_targets]},
    )
    targets = {"aux": labels, "Survival": survival}
    dataset = tf.data.Dataset.from_tensor_slices((x, targets, {"Survival": weights})).batch(8)
    checkpoint = parallel_keras.callbacks.ModelCheckpoint(
        str(tmp_path / "{epoch:02d}-{val_Survival_Cindex:.4f}.weights.h5"), save_weights_only=True
    )
    history = parallel.fit(
        dataset,
        epochs=2,
        verbose=0,
        callbacks=[checkpoint],
        validation_data=tf.data.Dataset.from_tensor_slices((x, targets)).batch(8),
    ).history

    assert seen == {"float32"}  # Keras 2 fed targets in the output's dtype
    assert "Survival_Cindex" in history and "val_Survival_Cindex" in history
    assert "Survival_dtype_of_targets" in history
    assert max_weight_difference(template, reference) < ATOL
    for name, values in expected.items():
        keras2_name = name.replace("_cindex", "_Cindex")
        np.testing.assert_allclose(history[keras2_name], values, atol=ATOL, err_msg=name)
    assert sorted(os.listdir(tmp_path)) == [
        f"{epoch:02d}-{value:.4f}.weights.h5"
        for epoch, value in enumerate(history["val_Survival_Cindex"], 1)
    ]


@pytest.mark.parametrize("loss", [{"score": "mse", "label": None}, {"score": "mse"}])
def test_dict_targets_may_leave_out_outputs_without_a_loss(loss):
    """Keras 2 fed targets only to outputs given a loss, and read a loss dict
    by output name (Keras 3.5-3.6 pair it with list outputs in sorted key
    order: "No loss to compute"); the one-device reference takes the list."""
    a, b, score, label = two_io_data()
    reference = two_input_two_output()
    reference.compile(optimizer=keras.optimizers.SGD(0.1), loss=["mse", None])
    reference.fit([a, b], [score, np.zeros_like(label)], batch_size=8, shuffle=False, verbose=0)
    template = two_input_two_output()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss)
    parallel.fit(
        [a, b],
        {"score": score},
        sample_weight={"score": np.ones(24)},
        batch_size=8,
        shuffle=False,
        verbose=0,
    )
    assert max_weight_difference(template, reference) < ATOL


@pytest.mark.parametrize("gpus", [2, 4])
def test_optimizer_scalars_convert_to_python_numbers_as_on_one_device(gpus):
    # Legacy scripts log `float(model.optimizer.lr)` and
    # `int(model.optimizer.iterations)`; a variable in the strategy raised TypeError.
    x = np.random.RandomState(0).rand(8, 3).astype("float32")
    y = np.random.RandomState(1).rand(8, 1).astype("float32")
    models = []
    for wrap in (False, True):
        keras.utils.set_random_seed(2)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        if wrap:
            model = parallel_keras.multi_gpu_model(model, gpus=gpus)
        model.compile(keras.optimizers.Adam(0.025), "mse")
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        models.append(model)
    reference, parallel = models
    assert float(parallel.optimizer.learning_rate) == float(reference.optimizer.learning_rate)
    assert int(parallel.optimizer.iterations) == int(reference.optimizer.iterations) == 2


# --- Tracing -------------------------------------------------------------------


class _CountsReplicaTraces(keras.layers.Layer):
    """The identity; counts the calls traced on a replica (one per replica
    each time Keras traces a step)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.replica_traces = 0

    def call(self, inputs):
        context = tf.distribute.get_replica_context()
        if tf.inside_function() and context is not None and context.num_replicas_in_sync > 1:
            self.replica_traces += 1
        return inputs


def test_the_first_fit_traces_the_train_step_once_per_replica():
    # A variable created inside a tf.function's first trace makes TensorFlow
    # trace it a second time; the replicas' seed counter was created there,
    # so a deep model waited through two traces of its step before step 1.
    keras.utils.set_random_seed(5)
    counter = _CountsReplicaTraces()
    inputs = keras.Input((4,))
    template = keras.Model(inputs, keras.layers.Dense(2)(counter(inputs)))
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    x = np.random.RandomState(3).rand(16, 4).astype("float32")
    y = np.random.RandomState(4).rand(16, 2).astype("float32")
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    parallel.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert counter.replica_traces == 4
