# SPDX-License-Identifier: Apache-2.0
"""With parallel_keras imported, `tf.device` scopes place functional layer calls.

A legacy device-parallel script whose only change is the import keeps its
`with tf.device('/gpu:i'):` branches: they take effect exactly as
`parallel_keras.device` does (checked where ops really ran, with
`parallel_keras.testing.record_op_devices`), and survive save and load. A
scope that cannot take effect is reported at the first call.
"""

import logging

import helpers
import keras
import numpy as np
import pytest
import tensorflow as tf

helpers.skip_module_without_placement()

import parallel_keras  # noqa: E402
from parallel_keras.testing import record_op_devices  # noqa: E402

VARIABLE_READS = {"ReadVariableOp", "VarHandleOp", "Placeholder", "NoOp"}


def _branches(scope, branches: int, merge_device: str | None = "/cpu:0"):
    """One input, `branches` Dense branches under `scope('/gpu:i')`, merged."""
    keras.utils.set_random_seed(3)
    inputs = keras.Input((6,), name="features")
    encoded = []
    for index in range(branches):
        with scope(f"/gpu:{index}"):
            encoded.append(keras.layers.Dense(4, name=f"branch_{index}")(inputs))
    if merge_device is None:
        merged = keras.layers.concatenate(encoded, name="merge")
    else:
        with scope(merge_device):
            merged = keras.layers.concatenate(encoded, name="merge")
    outputs = keras.layers.Dense(1, name="head")(merged)
    return keras.Model(inputs, outputs)


def _unscoped(name):
    import contextlib

    return contextlib.nullcontext()


def _compute_devices(records, name_contains):
    return {
        record.device
        for record in records
        if name_contains in record.name and record.op_type not in VARIABLE_READS
    }


def _traced_devices(records, layer):
    """Pinned devices of a layer's traced forward ops (`<model>/<layer>/...`)."""
    devices = set()
    for record in records:
        parts = record.name.split("/")
        if "gradient_tape" in parts or len(parts) < 3 or not parts[1].startswith(layer):
            continue
        if record.op_type not in VARIABLE_READS:
            devices.add(record.device)
    return devices


@pytest.mark.parametrize("branches", [2, 4])
def test_tf_device_branches_are_placed_as_with_parallel_keras_device(branches):
    with_tf = _branches(tf.device, branches)
    with_parallel_keras = _branches(parallel_keras.device, branches)
    plain = _branches(_unscoped, branches)
    report = [(call.layer, call.device) for call in parallel_keras.placement(with_tf)]
    assert report == [
        (call.layer, call.device) for call in parallel_keras.placement(with_parallel_keras)
    ]
    assert report == [(f"branch_{i}", f"/gpu:{i}") for i in range(branches)] + [
        ("merge", "/cpu:0"),
        ("head", None),
    ]
    x = np.random.RandomState(0).rand(8, 6).astype("float32")
    with record_op_devices() as ops:
        eager = with_tf(x)
    # '/gpu:i' rehearses on simulated CPU device i.
    for index in range(branches):
        assert _compute_devices(ops.eager, f"branch_{index}") == {f"/cpu:{index}"}
    np.testing.assert_allclose(eager, plain(x), atol=1e-6)

    for model in (with_tf, plain):
        model.compile(keras.optimizers.SGD(0.1), "mse")
    y = x.sum(axis=1, keepdims=True)
    with record_op_devices() as ops:
        with_tf.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    plain.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for index in range(branches):
        assert _traced_devices(ops.traced, f"branch_{index}") == {f"/cpu:{index}"}
    for placed, expected in zip(with_tf.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(placed, expected, atol=1e-6)


def test_tf_device_placement_survives_save_and_load(tmp_path):
    model = _branches(tf.device, 2)
    path = tmp_path / "placed.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert [(c.layer, c.device) for c in parallel_keras.placement(loaded)] == [
        (c.layer, c.device) for c in parallel_keras.placement(model)
    ]
    with record_op_devices() as ops:
        loaded(np.ones((2, 6), "float32"))
    assert _compute_devices(ops.eager, "branch_1") == {"/cpu:1"}


def test_the_innermost_scope_wins_whichever_kind():
    inputs = keras.Input((3,))
    with parallel_keras.device("/gpu:1"):
        with tf.device("/gpu:2"):
            inner_tf = keras.layers.Dense(2, name="inner_tf")(inputs)
        outer = keras.layers.Dense(2, name="outer")(inner_tf)
    with tf.device("/gpu:3"):
        with parallel_keras.device("/gpu:1"):
            inner_parallel_keras = keras.layers.Dense(2, name="inner_pk")(outer)
    model = keras.Model(inputs, inner_parallel_keras)
    assert [(c.layer, c.device) for c in parallel_keras.placement(model)] == [
        ("inner_tf", "/gpu:2"),
        ("outer", "/gpu:1"),
        ("inner_pk", "/gpu:1"),
    ]


@pytest.mark.parametrize("gpus", [2, 4])
def test_a_template_with_tf_device_branches_trains_on_the_replicas_as_one_device(gpus):
    """Replicas of multi_gpu_model ignore the template's placement, as Keras
    2's towers did (same weights as one device); the template called on its
    own keeps its branches on their devices."""
    x = np.random.RandomState(1).rand(16, 6).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    weights = []
    for replicated in (False, True):
        template = _branches(tf.device, 2)
        network = parallel_keras.multi_gpu_model(template, gpus=gpus) if replicated else template
        network.compile(keras.optimizers.SGD(0.1), "mse")
        network.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        weights.append(template.get_weights())
    for trained, expected in zip(*weights):
        np.testing.assert_allclose(trained, expected, atol=1e-5)
    with record_op_devices() as ops:
        template(x)
    assert _compute_devices(ops.eager, "branch_1") == {"/cpu:1"}


def test_a_scope_on_a_missing_device_is_reported_at_the_first_call(caplog):
    inputs = keras.Input((3,))
    with tf.device("/gpu:7"):
        hidden = keras.layers.Dense(2, name="on_missing_gpu")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, name="out")(hidden))
    assert [c.device for c in parallel_keras.placement(model)] == [None, None]
    with caplog.at_level(logging.WARNING):
        with record_op_devices() as ops:
            model(np.ones((2, 3), "float32"))
        model(np.ones((2, 3), "float32"))
    warnings = [r.getMessage() for r in caplog.records if "tf.device('/gpu:7')" in r.getMessage()]
    assert len(warnings) == 1
    assert "on_missing_gpu" in warnings[0] and "parallel_keras.device" in warnings[0]
    assert _compute_devices(ops.eager, "on_missing_gpu") == {"/cpu:0"}
