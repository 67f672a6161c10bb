# SPDX-License-Identifier: Apache-2.0
"""The parallel model gives one device's numbers where Keras 2's tests look.

Cases from Keras 2.2.4's `tests/keras/engine/test_training.py` that gave
silently different numbers on replicas (issue 29): per-output sample weights
holding a `None` on a batch that splits unevenly, a custom crossentropy on a
sigmoid or softmax output, and arrays with different row counts (refused, as
Keras 2 and one device refuse them). Every check compares with the template
compiled the same way on one device.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import one_device_on_batch

import parallel_keras

ATOL = 1e-5
ROWS = 10  # 3/3/3/1 on 4 replicas, 5/5 on 2


def max_weight_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights()))


def two_branches(seed=1):
    """Inputs `a`, `b`; outputs `oa` (from `a`) and `ob` (from both)."""
    keras.utils.set_random_seed(seed)
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    oa = keras.layers.Dense(2, name="oa")(a)
    ob = keras.layers.Dense(2, name="ob")(keras.layers.Concatenate()([a, b]))
    return keras.Model([a, b], [oa, ob])


def branch_data(rows=ROWS):
    rng = np.random.default_rng(0)
    a, b, ya, yb = (rng.normal(size=(rows, size)).astype("float32") for size in (3, 3, 2, 2))
    weights = rng.uniform(0.1, 2.0, size=rows).astype("float32")
    return a, b, ya, yb, weights


# --- Per-output sample weights with a None -------------------------------------


@pytest.mark.parametrize("spelling", ["list", "dict"])
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_sample_weights_with_a_none_weigh_uneven_slices_as_one_device(gpus, spelling):
    """Keras 2 read `None` (or a missing name) as weights of 1 for that output.

    7 rows split 4/3 on 2 replicas and 2/2/2/1 on 4: the replicas' shares
    of the batch differ, so each replica's gradient must be weighted by its
    share (`steps.py`), which a batch holding a `None` skipped.
    """
    rows = 7
    a, b, ya, yb, w = branch_data(rows)
    keras2 = [np.ones(rows, "float32"), w]  # What Keras 2 made of the None.
    given = [None, w] if spelling == "list" else {"ob": w}
    reference = two_branches()
    reference.compile(keras.optimizers.SGD(0.1), "mse")
    template = two_branches()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")

    for method in ("train_on_batch", "test_on_batch"):
        expected = one_device_on_batch(reference, method, [a, b], [ya, yb], keras2)
        got = getattr(parallel, method)([a, b], [ya, yb], sample_weight=given)
        np.testing.assert_allclose(got, expected, atol=ATOL, err_msg=method)
        assert max_weight_difference(template, reference) < ATOL, method

    expected = reference.fit(
        [a, b], [ya, yb], sample_weight=keras2, batch_size=rows, epochs=2, verbose=0
    ).history
    history = parallel.fit(
        [a, b], [ya, yb], sample_weight=given, batch_size=rows, epochs=2, verbose=0
    ).history
    assert max_weight_difference(template, reference) < ATOL
    for name, values in expected.items():
        np.testing.assert_allclose(history[name], values, atol=ATOL, err_msg=name)
    np.testing.assert_allclose(
        parallel.evaluate([a, b], [ya, yb], sample_weight=given, batch_size=rows, verbose=0),
        reference.evaluate([a, b], [ya, yb], sample_weight=keras2, batch_size=rows, verbose=0),
        atol=ATOL,
    )


@pytest.mark.parametrize("spelling", ["list", "dict"])
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_per_output_class_weights_with_a_none_train_as_keras_2(gpus, spelling):
    """Keras 2 took `class_weight` per output (a list, or a dict by output
    name), `None` for an output without; Keras 3 takes one output's only.
    Keras 2's meaning: each row weighted by its class, in that output only."""
    a, b, ya, _, _ = branch_data()
    labels = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1])
    yb = keras.utils.to_categorical(labels, 2).astype("float32")
    classes = {0: 3.0, 1: 0.5}
    keras2 = [np.ones(ROWS, "float32"), np.array([classes[c] for c in labels], "float32")]
    given = [None, classes] if spelling == "list" else {"ob": classes}
    reference = two_branches()
    reference.compile(keras.optimizers.SGD(0.1), "mse")
    template = two_branches()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")

    expected = one_device_on_batch(reference, "train_on_batch", [a, b], [ya, yb], keras2)
    got = parallel.train_on_batch([a, b], [ya, yb], class_weight=given)
    np.testing.assert_allclose(got, expected, atol=ATOL)
    reference.fit([a, b], [ya, yb], sample_weight=keras2, batch_size=ROWS, verbose=0)
    parallel.fit([a, b], [ya, yb], class_weight=given, batch_size=ROWS, verbose=0)
    assert max_weight_difference(template, reference) < ATOL

    with pytest.raises(ValueError, match=r"output 'ob' with classes \[0\].*\[1\]"):
        parallel.train_on_batch([a, b], [ya, yb], class_weight={"ob": {0: 1.0}})


@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_one_outputs_weights_by_name_or_in_a_list_as_keras_2(gpus):
    """Keras 2 took one output's `class_weight` and `sample_weight` alone, as
    `[weights]` or as `{output_name: weights}`."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(ROWS, 3)).astype("float32")
    labels = keras.utils.to_categorical(rng.integers(0, 2, size=ROWS), 2).astype("float32")
    w = rng.uniform(0.1, 2.0, size=ROWS).astype("float32")
    classes = {0: 3.0, 1: 0.5}

    def build():
        keras.utils.set_random_seed(2)
        inputs = keras.Input((3,))
        return keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))

    reference = build()
    reference.compile(keras.optimizers.SGD(0.1), "mse")
    template = build()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    for given, keras3 in (
        ({"class_weight": {"out": classes}}, {"class_weight": classes}),
        ({"class_weight": [classes]}, {"class_weight": classes}),
        ({"sample_weight": [w]}, {"sample_weight": w}),
    ):
        expected = one_device_on_batch(reference, "train_on_batch", x, labels, **keras3)
        np.testing.assert_allclose(
            parallel.train_on_batch(x, labels, **given), expected, atol=ATOL, err_msg=str(given)
        )
        assert max_weight_difference(template, reference) < ATOL, given


# --- A custom crossentropy on a sigmoid or softmax output ----------------------


def _bce(y_true, y_pred):
    return keras.ops.binary_crossentropy(y_true, y_pred)


class _CategoricalLoss(keras.losses.Loss):
    def call(self, y_true, y_pred):
        return keras.ops.categorical_crossentropy(y_true, y_pred)


def _probabilities(activation, units, seed=3):
    """Saturated units: kernels large enough that some outputs round to 0 or 1."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,))
    if activation == "tf.nn.sigmoid":  # a bare TF op: Keras reads its `Sigmoid`
        logits = keras.layers.Dense(units, kernel_initializer=_large())(inputs)
        outputs = keras.layers.Lambda(tf.nn.sigmoid)(logits)
    else:
        outputs = keras.layers.Dense(units, activation=activation, kernel_initializer=_large())(
            inputs
        )
    return keras.Model(inputs, outputs)


def _large():
    return keras.initializers.RandomNormal(stddev=6.0, seed=3)


def _crossentropy_cases():
    rng = np.random.default_rng(0)
    binary = rng.integers(0, 2, size=(ROWS, 2)).astype("float32")
    sparse = rng.integers(0, 3, size=(ROWS, 1))
    categorical = keras.utils.to_categorical(sparse[:, 0], 3).astype("float32")
    return {
        "lambda-binary": (
            "sigmoid",
            2,
            lambda t, p: keras.ops.binary_crossentropy(t, p),
            binary,
            "binary_crossentropy",
        ),
        "named-binary-on-op": ("tf.nn.sigmoid", 2, _bce, binary, "binary_crossentropy"),
        "categorical-loss-subclass": (
            "softmax",
            3,
            _CategoricalLoss(),
            categorical,
            "categorical_crossentropy",
        ),
        "lambda-sparse": (
            "softmax",
            3,
            lambda t, p: keras.ops.sparse_categorical_crossentropy(t, p),
            sparse,
            "sparse_categorical_crossentropy",
        ),
    }


@pytest.mark.parametrize("case", sorted(_crossentropy_cases()))
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_custom_crossentropy_on_probabilities_reads_logits_as_one_device(gpus, case):
    """One device computes Keras's crossentropies from the logits behind a
    sigmoid or softmax output; a loss over the gathered outputs must too,
    or it clips probabilities (another value, and saturated units stop
    training). The reference is one device under Keras 3 (tf.keras reads
    the `Sigmoid`/`Softmax` op too); Keras 2.2.4's
    backend clipped on one device and on its towers alike."""
    activation, units, loss, y, metric = _crossentropy_cases()[case]
    x = np.random.default_rng(1).normal(size=(ROWS, 3)).astype("float32")
    reference = _probabilities(activation, units)
    reference.compile(keras.optimizers.SGD(0.05), loss, metrics=[metric])
    template = _probabilities(activation, units)
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.05), loss, metrics=[metric])
    assert parallel.batch_loss == "global"

    expected = reference.evaluate(x, y, batch_size=ROWS, verbose=0)
    # A clipped loss would differ by far more than this (7.06 against 7.42
    # in the case).
    np.testing.assert_allclose(
        parallel.evaluate(x, y, batch_size=ROWS, verbose=0), expected, rtol=1e-5
    )
    expected = reference.fit(x, y, batch_size=ROWS, epochs=2, verbose=0).history
    history = parallel.fit(x, y, batch_size=ROWS, epochs=2, verbose=0).history
    assert max_weight_difference(template, reference) < ATOL
    for name, values in expected.items():
        np.testing.assert_allclose(history[name], values, rtol=1e-5, err_msg=name)


# --- Arrays with different row counts ----------------------------------------


@pytest.mark.parametrize("gpus", [2, 4])
def test_arrays_with_different_row_counts_are_refused_before_the_model_is_touched(gpus):
    """Keras 2's `check_array_length_consistency`: every array of a call
    has the same rows. Sliced apart by replica, `[a, b[:2]]` trained on
    broadcast rows instead."""
    a, b, ya, yb, w = branch_data()
    template = two_branches()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    before = template.get_weights()
    calls = {
        "train_on_batch": lambda *d: parallel.train_on_batch(*d),
        "test_on_batch": lambda *d: parallel.test_on_batch(*d),
        "fit": lambda *d: parallel.fit(*d[:2], sample_weight=d[2], batch_size=ROWS, verbose=0),
        "evaluate": lambda *d: parallel.evaluate(
            *d[:2], sample_weight=d[2], batch_size=ROWS, verbose=0
        ),
    }
    for method, call in calls.items():
        received = rf"Received: {method} with rows "
        with pytest.raises(
            ValueError, match=received + r"x=\[10, 2\], y=\[10, 10\], sample_weight=\[None, 10\]"
        ):
            call([a, b[:2]], [ya, yb], [None, w])
        with pytest.raises(ValueError, match=received + r"x=\[10, 10\], y=\[10, 5\]\."):
            call([a, b], [ya, yb[:5]], None)
        with pytest.raises(ValueError, match=r"sample_weight=\[None, 4\]\. Pass arrays"):
            call([a, b], [ya, yb], [None, w[:4]])
    with pytest.raises(
        ValueError, match=r"fit\(validation_data=...\) with rows x=\[10, 10\], y=\[10, 3\]"
    ):
        parallel.fit([a, b], [ya, yb], validation_data=([a, b], [ya, yb[:3]]), verbose=0)
    for method in ("predict", "predict_on_batch"):
        with pytest.raises(ValueError, match=rf"{method} with rows x=\[10, 2\]"):
            getattr(parallel, method)([a, b[:2]])
    for now, then in zip(template.get_weights(), before):
        np.testing.assert_array_equal(now, then)
    assert int(np.asarray(parallel.optimizer.iterations)) == 0


def test_python_numbers_have_no_rows_to_compare():
    """Lists of Python numbers (one array to Keras 2) pass the row check as
    they are; arrays nested in dicts and lists are compared."""
    from parallel_keras.data_parallel import sample_weights

    sample_weights.check_rows("train_on_batch", [[1.0, 2.0], [3.0, 4.0]], [0, 1])
    sample_weights.check_rows("fit", {"a": np.zeros((3, 2))}, [np.zeros(3), None])
    with pytest.raises(ValueError, match=r"Received: fit with rows x=3, y=\[3, 2\]"):
        sample_weights.check_rows("fit", {"a": np.zeros((3, 2))}, [np.zeros(3), {"b": np.zeros(2)}])


@pytest.mark.parametrize("gpus", [2, 4])
def test_a_class_weight_that_is_not_a_dict_is_ignored_as_keras_2_did(gpus):
    """Keras 2's `standardize_weights` used `class_weight` only when it was a
    dict: a list of one dict per label of a multi-label output (CheXNet-Keras'
    `get_class_weights`) trained as without class weights. Keras 3 refuses it."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(ROWS, 3)).astype("float32")
    labels = rng.integers(0, 2, size=(ROWS, 4)).astype("float32")
    per_label = [{0: 0.2, 1: 0.8 + k} for k in range(4)]

    def build():
        keras.utils.set_random_seed(2)
        inputs = keras.Input((3,))
        return keras.Model(inputs, keras.layers.Dense(4, activation="sigmoid")(inputs))

    reference = build()
    reference.compile(keras.optimizers.SGD(0.1), "binary_crossentropy")
    expected = one_device_on_batch(reference, "train_on_batch", x, labels)
    template = build()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.1), "binary_crossentropy")
    got = parallel.train_on_batch(x, labels, class_weight=per_label)
    np.testing.assert_allclose(got, expected, atol=ATOL)
    assert max_weight_difference(template, reference) < ATOL
    parallel.fit(x, labels, class_weight=per_label, batch_size=ROWS, epochs=1, verbose=0)
