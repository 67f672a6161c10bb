# SPDX-License-Identifier: Apache-2.0
"""compat.load_model of a whole-model HDF5 file resumes training where it stopped.

Keras 2 scripts checkpoint with `model.save("m.h5")` and resume with
`load_model("m.h5")` and `fit`. Each test trains a model N steps, saves it,
loads it, trains M more, and compares with a twin trained N+M steps without
the round trip: same weights, same optimizer iterations, same log keys.
"""

from __future__ import annotations

import h5py
import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import compat

_FIRST_STEPS = 3
_MORE_STEPS = 2
_INPUTS = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3)
_TARGETS = keras.utils.to_categorical(np.arange(8) % 2, 2).astype("float32")


def _model(kind: str) -> keras.Model:
    if kind == "sequential":
        return keras.Sequential(
            [
                keras.Input((3,)),
                keras.layers.Dense(4, activation="tanh", name="hidden"),
                keras.layers.Dense(2, activation="softmax", name="out"),
            ]
        )
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh", name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, activation="softmax", name="out")(hidden))


_OPTIMIZERS = {
    "sgd_momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "adam": lambda: keras.optimizers.Adam(0.01),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01),
    # One variable without a name (`variable_2` in one process, `variable_5` in another).
    "nadam": lambda: keras.optimizers.Nadam(0.01),
}


def _fit(model: keras.Model, steps: int, validate: bool = False) -> keras.callbacks.History:
    # Full batch, unshuffled: every step sees the same data in both runs.
    return model.fit(
        _INPUTS,
        _TARGETS,
        batch_size=len(_INPUTS),
        epochs=steps,
        shuffle=False,
        validation_data=(_INPUTS, _TARGETS) if validate else None,
        verbose=0,
    )


def _twins(kind: str, optimizer: str, loss: str, metrics: list[str]):
    uninterrupted, resumed = _model(kind), _model(kind)
    resumed.set_weights(uninterrupted.get_weights())
    for model in (uninterrupted, resumed):
        model.compile(_OPTIMIZERS[optimizer](), loss, metrics=metrics)
    return uninterrupted, resumed


# Both model kinds, every optimizer, loss/metrics pair and path kind (.h5, .hdf5, no suffix).
_CASES = [
    ("sequential", "sgd_momentum", "mse", ["mae"], "model.h5"),
    ("functional", "sgd_momentum", "categorical_crossentropy", ["accuracy"], "checkpoint"),
    ("sequential", "adam", "mae", ["mae"], "checkpoint"),
    ("functional", "adam", "mse", ["mae"], "model.hdf5"),
    ("functional", "rmsprop", "mae", ["mae"], "model.h5"),
    ("sequential", "rmsprop", "categorical_crossentropy", ["accuracy"], "model.h5"),
    ("functional", "nadam", "mse", ["mae"], "checkpoint"),
]


@pytest.mark.parametrize("kind, optimizer, loss, metrics, filename", _CASES)
def test_a_loaded_hdf5_model_trains_on_exactly_as_if_never_saved(
    tmp_path, kind, optimizer, loss, metrics, filename
):
    uninterrupted, resumed = _twins(kind, optimizer, loss, metrics)
    _fit(uninterrupted, _FIRST_STEPS)
    expected_logs = _fit(uninterrupted, _MORE_STEPS, validate=True).history

    _fit(resumed, _FIRST_STEPS)
    path = str(tmp_path / filename)
    compat.save_model(resumed, path)  # a suffix-less path gets Keras 2's HDF5 file too
    assert h5py.is_hdf5(path)
    loaded = compat.load_model(path)
    assert int(loaded.optimizer.iterations.numpy()) == _FIRST_STEPS
    logs = _fit(loaded, _MORE_STEPS, validate=True).history

    assert sorted(logs) == sorted(expected_logs)  # a callback on "val_mae" finds it
    for name, values in expected_logs.items():
        np.testing.assert_allclose(logs[name], values, rtol=1e-6, err_msg=name)
    for got, want in zip(loaded.get_weights(), uninterrupted.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert int(loaded.optimizer.iterations.numpy()) == _FIRST_STEPS + _MORE_STEPS
    for got, want in zip(
        loaded.optimizer.variables, uninterrupted.optimizer.variables, strict=True
    ):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


@pytest.fixture
def mixed_precision():
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy(before)


def test_a_loaded_mixed_precision_model_resumes_with_its_loss_scale(tmp_path, mixed_precision):
    # compile wraps the optimizer in a LossScaleOptimizer; its variables nest the inner one's.
    uninterrupted, resumed = _twins("sequential", "adam", "mean_squared_error", ["mae"])
    _fit(uninterrupted, _FIRST_STEPS)
    _fit(uninterrupted, _MORE_STEPS)

    _fit(resumed, _FIRST_STEPS)
    path = str(tmp_path / "model.h5")
    resumed.save(path)
    loaded = compat.load_model(path)
    assert isinstance(loaded.optimizer, keras.optimizers.LossScaleOptimizer)
    _fit(loaded, _MORE_STEPS)

    for got, want in zip(loaded.get_weights(), uninterrupted.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for got, want in zip(
        loaded.optimizer.variables, uninterrupted.optimizer.variables, strict=True
    ):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_a_loaded_hdf5_model_resumes_on_replicas_with_its_optimizer_state(tmp_path):
    uninterrupted, resumed = _twins("functional", "adam", "mse", ["mae"])
    _fit(uninterrupted, _FIRST_STEPS)
    _fit(uninterrupted, _MORE_STEPS)

    _fit(resumed, _FIRST_STEPS)
    path = str(tmp_path / "model.h5")
    resumed.save(path)
    loaded = compat.load_model(path)
    parallel = parallel_keras.multi_gpu_model(loaded, gpus=2)
    parallel.compile(loaded.optimizer, "mse", metrics=["mae"])
    logs = _fit(parallel, _MORE_STEPS).history

    assert sorted(logs) == ["loss", "mae"]
    assert int(loaded.optimizer.iterations.numpy()) == _FIRST_STEPS + _MORE_STEPS
    # Two replicas average the halves' gradients: equal up to float rounding.
    for got, want in zip(loaded.get_weights(), uninterrupted.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_loss_the_file_names_but_keras_does_not_know_is_an_error_naming_it(tmp_path):
    def keras2_loss(y_true, y_pred):
        return keras.ops.mean(keras.ops.square(y_true - y_pred))

    model = _model("sequential")
    model.compile("adam", keras2_loss)
    _fit(model, 1)
    path = str(tmp_path / "model.h5")
    model.save(path)
    before = open(path, "rb").read()

    with pytest.raises(ValueError, match=r"Received: loss='keras2_loss'.*custom_objects"):
        compat.load_model(path)
    assert open(path, "rb").read() == before

    loaded = compat.load_model(path, custom_objects={"keras2_loss": keras2_loss})
    assert int(loaded.optimizer.iterations.numpy()) == 1
    _fit(loaded, 1)
    assert int(loaded.optimizer.iterations.numpy()) == 2


def test_an_hdf5_model_saved_without_its_optimizer_loads_uncompiled(tmp_path):
    model = _model("functional")
    model.compile("adam", "mse")
    _fit(model, 1)
    path = str(tmp_path / "model.h5")
    model.save(path, include_optimizer=False)
    loaded = compat.load_model(path)
    assert not loaded.compiled
    for got, want in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_an_optimizer_state_of_other_variables_is_left_out_with_a_warning(tmp_path, caplog):
    model = _model("sequential")
    model.compile(keras.optimizers.Adam(0.01), "mean_squared_error")
    _fit(model, 2)
    path = str(tmp_path / "model.h5")
    model.save(path)
    with h5py.File(path, "r+") as file:  # the optimizer state as tf.keras 2 named it
        del file["optimizer_weights"]
        group = file.create_group("optimizer_weights")
        group.attrs["weight_names"] = [b"Adam/iter:0", b"Adam/hidden/kernel/m:0"]
        group.create_dataset("Adam/iter:0", data=np.int64(7))
        group.create_dataset("Adam/hidden/kernel/m:0", data=np.ones((3, 4), "float32"))

    with caplog.at_level("WARNING"):
        loaded = compat.load_model(path)
    assert "resumes with a fresh optimizer" in caplog.text
    assert "iter:0" in caplog.text
    assert int(loaded.optimizer.iterations.numpy()) == 0
    _fit(loaded, 1)
    assert int(loaded.optimizer.iterations.numpy()) == 1


def test_a_model_saved_before_its_first_step_loads_and_trains_as_a_fresh_one(tmp_path, caplog):
    fresh, saved = _twins("functional", "adam", "mse", ["mae"])
    path = str(tmp_path / "model.h5")
    saved.save(path)  # the file holds the optimizer's iterations and learning rate only
    with caplog.at_level("WARNING"):
        loaded = compat.load_model(path)
    assert "fresh optimizer" not in caplog.text
    _fit(fresh, _MORE_STEPS)
    _fit(loaded, _MORE_STEPS)
    assert int(loaded.optimizer.iterations.numpy()) == _MORE_STEPS
    for got, want in zip(loaded.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
