# SPDX-License-Identifier: Apache-2.0
"""A saved `compat.keras2_optimizer` comes back as itself, and plain Keras still reads the file.

Keras 2 scripts resume from a saved model (`load_model(path)`, then `fit`);
migrate builds their RMSprop/Adagrad/Nadam and every `decay=` through
`compat.keras2_optimizer`. Loaded back as Keras 3's class, training would go
on with Keras 3's formula and without the decay: a silent change of numbers.
"""

from __future__ import annotations

import os
import warnings

import keras
import numpy as np
import pytest

from parallel_keras import compat
from parallel_keras.compat import optimizer_helpers

RNG = np.random.RandomState(0)
X = (RNG.rand(16, 3) * 0.01).astype("float32")
Y = (RNG.rand(16, 2) * 0.01).astype("float32")
CASES = {
    "RMSprop": ("RMSprop", {}),
    "Adagrad_decay": ("Adagrad", {"decay": 0.1}),
    "Nadam": ("Nadam", {}),
    "Nadam_schedule_decay": ("Nadam", {"schedule_decay": 0.1}),
    "SGD_momentum_decay": ("SGD", {"lr": 0.1, "momentum": 0.9, "decay": 0.1}),
}
# A loss Keras 3's HDF5 loader reads back ("mse" it does not, upstream).
LOSS = "mean_squared_error"


def _model() -> keras.Model:
    inputs = keras.Input((3,))
    outputs = keras.layers.Dense(2, kernel_initializer="ones")(inputs)
    return keras.Model(inputs, outputs)


def _compiled(name, kwargs) -> keras.Model:
    model = _model()
    model.compile(compat.keras2_optimizer(getattr(keras.optimizers, name))(**kwargs), LOSS)
    return model


def _fit(model, epochs):
    model.fit(X, Y, batch_size=len(X), epochs=epochs, shuffle=False, verbose=0)


@pytest.mark.parametrize("name, kwargs", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("filename", ["m.keras", "m.h5", "model_loss0.12"])
def test_a_keras2_optimizer_resumes_as_itself(name, kwargs, filename, tmp_path):
    uninterrupted = _compiled(name, kwargs)
    _fit(uninterrupted, 6)
    model = _compiled(name, kwargs)
    _fit(model, 3)
    compat.save_model(model, os.fspath(tmp_path / filename))
    resumed = compat.load_model(tmp_path / filename)

    keras2_class = compat.keras2_optimizer(getattr(keras.optimizers, name))
    assert type(resumed.optimizer) is keras2_class
    assert resumed.optimizer.decay == kwargs.get("decay", 0.0)
    assert int(resumed.optimizer.iterations) == 3
    _fit(resumed, 3)
    for got, want in zip(resumed.get_weights(), uninterrupted.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name, kwargs", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("filename", ["m.h5", "model_loss0.12"])
def test_hdf5_model_files_load_the_keras2_optimizer(name, kwargs, filename, tmp_path):
    # Keras 2 wrote HDF5 at any path; compat.save_model writes it there too.
    # (Nadam's per-variable schedule used to make the HDF5 writer fail on
    # a repeated weight name.)
    model = _compiled(name, kwargs)
    _fit(model, 2)
    path = os.fspath(tmp_path / filename)
    compat.save_model(model, path)
    loaded = compat.load_model(path)

    assert type(loaded.optimizer) is type(model.optimizer)
    assert loaded.optimizer.decay == model.optimizer.decay
    assert int(loaded.optimizer.iterations) == 2
    if name == "Nadam":
        assert loaded.optimizer.schedule_decay == kwargs.get("schedule_decay", 0.004)


@pytest.mark.parametrize("name, kwargs", [CASES["RMSprop"], CASES["Adagrad_decay"], CASES["Nadam"]])
def test_plain_keras_reads_the_archive_with_its_own_class(name, kwargs, tmp_path):
    model = _compiled(name, kwargs)
    _fit(model, 2)
    model.save(tmp_path / "m.keras")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.models.load_model(tmp_path / "m.keras")

    assert type(loaded.optimizer) is getattr(keras.optimizers, name)
    for got, want in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got, want)
    if kwargs.get("decay"):
        # Keras 3 says it drops the decay.
        assert any("decay" in str(warning.message) for warning in caught)


def test_a_keras3_optimizer_stays_keras3s_through_compat_load_model(tmp_path):
    model = _model()
    model.compile(keras.optimizers.RMSprop(), LOSS)
    _fit(model, 1)
    model.save(tmp_path / "m.keras")
    compat.save_model(model, os.fspath(tmp_path / "m.h5"))

    assert type(compat.load_model(tmp_path / "m.keras").optimizer) is keras.optimizers.RMSprop
    assert type(compat.load_model(tmp_path / "m.h5").optimizer) is keras.optimizers.RMSprop


def test_the_users_custom_objects_win(tmp_path):
    class MyRMSprop(keras.optimizers.RMSprop):
        pass

    model = _compiled("RMSprop", {})
    _fit(model, 1)
    model.save(tmp_path / "m.keras")
    loaded = compat.load_model(tmp_path / "m.keras", custom_objects={"RMSprop": MyRMSprop})

    assert type(loaded.optimizer) is MyRMSprop


def test_the_saved_name_carries_the_mark_and_the_optimizer_keeps_its_own():
    keras2_class = compat.keras2_optimizer(keras.optimizers.RMSprop)
    optimizer = keras2_class(lr=0.01, name="mine")
    config = optimizer.get_config()

    assert optimizer.name == "mine"
    assert config["name"] == "keras2_mine"
    assert "schedule_decay" not in compat.keras2_optimizer(keras.optimizers.Nadam)().get_config()
    assert keras2_class.from_config(config).name == "mine"
    assert optimizer_helpers.keras2_optimizer_objects(
        {"class_name": "RMSprop", "config": config}
    ) == {
        "RMSprop": keras2_class,
        "rmsprop": keras2_class,
    }
    assert (
        optimizer_helpers.keras2_optimizer_objects(
            {"class_name": "RMSprop", "config": {"name": "x"}}
        )
        == {}
    )
