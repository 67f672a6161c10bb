# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.legacy_h5_models` (Keras 3.5 to 3.15).

The first three fail when Keras's own `load_model` of an `.h5` file resumes
training as compiled (then `saving.legacy_models` can hand `compile=True`
back to Keras); the last fails when the file layout read here changes.
"""

import h5py
import keras
import numpy as np
import pytest

from parallel_keras._internals import legacy_h5_models


def _trained_h5(path: str, loss: str = "mean_squared_error") -> keras.Model:
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
    model.compile(keras.optimizers.Adam(0.01), loss, metrics=["mae"])
    model.fit(np.ones((4, 3)), np.ones((4, 2)), epochs=2, verbose=0)
    model.save(path)
    return model


def test_keras_load_model_of_h5_still_builds_the_optimizer_for_no_variable(tmp_path):
    path = str(tmp_path / "model.h5")
    saved = _trained_h5(path)
    loaded = keras.models.load_model(path)
    # `set_weights` zips: iterations and learning rate restored, Adam's moments dropped.
    assert len(saved.optimizer.variables) == 6
    assert len(loaded.optimizer.variables) == 2
    with pytest.raises(ValueError, match="Unknown variable"):
        loaded.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)


def test_keras_load_model_of_h5_still_refuses_a_loss_alias(tmp_path):
    path = str(tmp_path / "model.h5")
    _trained_h5(path, loss="mse")
    # Keras 3.15: ValueError "Could not deserialize 'keras.metrics.mse' ...";
    # Keras 3.5: TypeError "Could not locate function 'mse'".
    with pytest.raises(
        (ValueError, TypeError),
        match="Could not deserialize 'keras.metrics.mse'|Could not locate function 'mse'",
    ):
        keras.models.load_model(path)


def test_keras_load_model_of_h5_still_renames_a_metric_alias(tmp_path):
    path = str(tmp_path / "model.h5")
    _trained_h5(path)  # metrics=["mae"]: the logs say "mae" and "val_mae"
    metrics = keras.models.load_model(path).get_compile_config()["metrics"]
    assert [metric["config"]["name"] for metric in metrics] == ["mean_absolute_error"]


def test_the_file_holds_the_training_config_and_the_optimizer_variables_by_path(tmp_path):
    path = str(tmp_path / "model.h5")
    model = _trained_h5(path, loss="mse")
    with h5py.File(path, "r") as file:
        config = legacy_h5_models.training_config(file)
        saved = legacy_h5_models.optimizer_weights(file)
        written_by = legacy_h5_models.keras_version(file)
    assert written_by == keras.__version__
    assert config["loss"] == "mse" and config["metrics"] == ["mae"]
    assert config["optimizer_config"]["class_name"] == "Adam"
    assert [name for name, _ in saved] == [v.path for v in model.optimizer.variables]
    for (_, value), variable in zip(saved, model.optimizer.variables, strict=True):
        np.testing.assert_array_equal(value, variable.numpy())
    assert dict(saved)[model.optimizer.iterations.path] == 2
