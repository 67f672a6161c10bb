# SPDX-License-Identifier: Apache-2.0
"""Placement survives .keras save/load; plain Keras still loads the file."""

import json
import zipfile

import helpers
import keras
import numpy as np
import pytest

helpers.skip_module_without_placement()

import parallel_keras  # noqa: E402
from parallel_keras.testing import record_op_devices, run_python  # noqa: E402


def build_placed():
    keras.utils.set_random_seed(3)
    input_a = keras.Input((10, 8), name="input_a")
    input_b = keras.Input((10, 8), name="input_b")
    shared_lstm = keras.layers.LSTM(4, name="shared_lstm")
    with parallel_keras.device("/gpu:1"):
        encoded_a = shared_lstm(input_a)
    with parallel_keras.device("/gpu:2"):
        encoded_b = shared_lstm(input_b)
    with parallel_keras.device("/cpu:0"):
        merged = keras.layers.concatenate([encoded_a, encoded_b], name="merge")
    outputs = keras.layers.Dense(3, name="head")(merged)
    return keras.Model([input_a, input_b], outputs)


def inputs():
    rng = np.random.default_rng(1)
    return [rng.random((4, 10, 8), dtype=np.float32) for _ in range(2)]


def lstm_compute_devices(records):
    return {r.device for r in records if "shared_lstm" in r.name and r.op_type != "ReadVariableOp"}


def test_keras_file_round_trip_keeps_placement_and_where_ops_run(tmp_path):
    model = build_placed()
    path = str(tmp_path / "placed.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert parallel_keras.placement(loaded) == parallel_keras.placement(model)
    with record_op_devices() as ops:
        outputs = loaded(inputs())
    assert lstm_compute_devices(ops.eager) == {"/cpu:1", "/cpu:2"}
    np.testing.assert_allclose(outputs, model(inputs()), atol=1e-5)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    assert config["config"]["parallel_keras_placement"] == {
        "shared_lstm": ["/gpu:1", "/gpu:2"],
        "merge": ["/cpu:0"],
    }


def test_json_config_round_trip_keeps_placement():
    model = build_placed()
    restored = keras.models.model_from_json(model.to_json())
    assert parallel_keras.placement(restored) == parallel_keras.placement(model)
    from_config = keras.Model.from_config(model.get_config())
    assert parallel_keras.placement(from_config) == parallel_keras.placement(model)


def test_unplaced_model_config_is_what_keras_writes():
    input_a = keras.Input((3,))
    model = keras.Model(input_a, keras.layers.Dense(2)(input_a))
    assert "parallel_keras_placement" not in model.get_config()


@pytest.mark.subprocess
def test_plain_keras_loads_the_file_and_runs_on_default_placement(tmp_path):
    model = build_placed()
    path = str(tmp_path / "placed.keras")
    model.save(path)
    np.save(tmp_path / "x.npy", np.stack(inputs()))
    np.save(tmp_path / "expected.npy", np.asarray(model(inputs())))
    run_python(
        f"""
        import os, sys
        import numpy as np
        import keras
        import tensorflow as tf
        tf.config.set_logical_device_configuration(
            tf.config.list_physical_devices("CPU")[0],
            [tf.config.LogicalDeviceConfiguration()] * 3)
        model = keras.saving.load_model({path!r})
        x = list(np.load({str(tmp_path / "x.npy")!r}))
        encoders = keras.Model(model.inputs, model.get_layer("merge").input)
        devices = {{t.device[-5:] for t in encoders(x)}}
        assert devices == {{"CPU:0"}}, devices
        np.testing.assert_allclose(
            model(x), np.load({str(tmp_path / "expected.npy")!r}), atol=1e-5)
        assert "parallel_keras" not in sys.modules
        """,
    )


@pytest.mark.parametrize(
    "value, message",
    [
        (["/gpu:1"], "must map layer names"),
        ({"head": ["/cpu:0", 3]}, "must map layer names"),
        ({"no_such_layer": ["/cpu:0"]}, "does not have"),
        ({"head": [None, "/cpu:0"]}, "call 1 of layer 'head'"),
    ],
)
def test_malformed_saved_placement_is_refused(value, message):
    config = build_placed().get_config()
    config["parallel_keras_placement"] = value
    with pytest.raises(ValueError, match=message):
        keras.Model.from_config(config)
