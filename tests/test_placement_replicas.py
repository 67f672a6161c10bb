# SPDX-License-Identifier: Apache-2.0
"""A placed template in multi_gpu_model: each replica runs on its own device."""

import helpers
import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import logging

helpers.skip_module_without_placement()

import parallel_keras  # noqa: E402
from parallel_keras.testing import record_op_devices  # noqa: E402

REPLICAS = ["/gpu:1", "/gpu:2", "/gpu:3"]  # Simulated CPU devices 1..3.
REPLICA_DEVICES = {"/cpu:1", "/cpu:2", "/cpu:3"}
SCOPES = {"tf.device": tf.device, "parallel_keras.device": parallel_keras.device}


def _template(scope, kind):
    # The legacy idiom: the whole template built under the CPU device.
    with scope("/cpu:0"):
        if kind == "sequential":
            return keras.Sequential(
                [
                    keras.Input((3,)),
                    keras.layers.Dense(4, activation="relu", name="hidden"),
                    keras.layers.Dense(2, name="head"),
                ]
            )
        inputs = keras.Input((3,))
        hidden = keras.layers.Dense(4, activation="relu", name="hidden")(inputs)
        return keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))


def _data(rows=12):
    rng = np.random.default_rng(0)
    return rng.normal(size=(rows, 3)).astype("float32"), rng.normal(size=(rows, 2)).astype(
        "float32"
    )


def _step_op_devices(parallel, run):
    """Devices of the layer ops traced by a fresh step function (MatMul/BiasAdd)."""
    x, y = _data()
    run(parallel, x, y)  # Builds the model (Keras's symbolic scratch trace).
    parallel.make_train_function(force=True)
    parallel.make_predict_function(force=True)
    with record_op_devices() as ops:
        run(parallel, x, y)
    return ops


def _train(parallel, x, y):
    parallel.train_on_batch(x, y)


def _predict(parallel, x, y):
    del y
    parallel.predict(x, batch_size=12, verbose=0)


@pytest.mark.parametrize("kind", ["functional", "sequential"])
@pytest.mark.parametrize("scope_name", list(SCOPES))
@pytest.mark.parametrize("cpu_relocation", [False, True])
@pytest.mark.parametrize("run", [_train, _predict], ids=["train", "predict"])
def test_template_built_under_cpu_runs_each_replica_on_its_device(
    scope_name, kind, cpu_relocation, run
):
    template = _template(SCOPES[scope_name], kind)
    parallel = parallel_keras.multi_gpu_model(
        template, gpus=REPLICAS, cpu_relocation=cpu_relocation
    )
    parallel.compile(optimizer="sgd", loss="mse")
    ops = _step_op_devices(parallel, run)
    for layer in ("hidden", "head"):
        counts = ops.device_counts(f"{layer}_", traced=True)
        counts.pop(None, None)  # Ops left to the placer (none of the layer's math).
        # Every replica ran the layer (forward, and backward when training)
        # on its own device, the same number of ops each; none on /cpu:0.
        assert set(counts) == REPLICA_DEVICES, (layer, counts)
        assert len(set(counts.values())) == 1, (layer, counts)


def test_template_called_directly_keeps_its_placement():
    template = _template(parallel_keras.device, "functional")
    parallel_keras.multi_gpu_model(template, gpus=REPLICAS)
    x, _ = _data()
    with record_op_devices() as ops, tf.device("/cpu:2"):
        template(x)
    # The math; variable reads run where the strategy keeps the variables.
    math = {r.device for r in ops.eager if "hidden" in r.name and r.op_type in ("MatMul", "Relu")}
    assert math == {"/cpu:0"}, ops.eager


def test_placed_template_trains_as_one_device():
    x, y = _data()
    reference = _template(tf.device, "functional")
    template = _template(parallel_keras.device, "functional")
    template.set_weights(reference.get_weights())
    reference.compile(optimizer="sgd", loss="mse")
    parallel = parallel_keras.multi_gpu_model(template, gpus=REPLICAS)
    parallel.compile(optimizer="sgd", loss="mse")
    reference.fit(x, y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    parallel.fit(x, y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_branches_placed_on_several_devices_follow_the_replicas_with_a_warning(monkeypatch):
    input_a, input_b = keras.Input((3,)), keras.Input((3,))
    branch_a = keras.layers.Dense(4, name="branch_a")(input_a)
    branch_b = keras.layers.Dense(4, name="branch_b")(input_b)
    merged = keras.layers.concatenate([branch_a, branch_b])
    template = keras.Model([input_a, input_b], keras.layers.Dense(2, name="head")(merged))
    parallel_keras.place_branches(template, ["/gpu:0", "/gpu:1"])
    warnings = []
    monkeypatch.setattr(logging, "warning", lambda message, *args: warnings.append(message % args))
    parallel = parallel_keras.multi_gpu_model(template, gpus=REPLICAS)
    assert len(warnings) == 1 and "['/gpu:0', '/gpu:1']" in warnings[0], warnings
    parallel.compile(optimizer="sgd", loss="mse")
    x, y = _data()
    parallel.train_on_batch([x, x], y)
    parallel.make_train_function(force=True)
    with record_op_devices() as ops:
        parallel.train_on_batch([x, x], y)
    for layer in ("branch_a", "branch_b"):
        counts = ops.device_counts(f"{layer}_", traced=True)
        counts.pop(None, None)
        assert set(counts) == REPLICA_DEVICES, (layer, counts)
    # The template's own placement is unchanged.
    assert {c.device for c in parallel_keras.placement(template)} == {"/gpu:0", "/gpu:1", None}


class _ScaleOnCpu0(keras.layers.Layer):
    """A layer whose own call pins its op, as legacy custom layers did."""

    def call(self, inputs):
        with tf.device("/cpu:0"), tf.name_scope("pinned_by_call"):
            return inputs * 2.0


def test_a_device_scope_inside_a_layer_call_still_applies_in_each_replica():
    # Keras 2's towers re-ran each layer's call, so a tf.device written in it
    # applied there; only the scopes around the building code were lost.
    with parallel_keras.device("/cpu:0"):
        inputs = keras.Input((3,))
        hidden = keras.layers.Dense(4, name="hidden")(inputs)
        template = keras.Model(inputs, keras.layers.Dense(2, name="head")(_ScaleOnCpu0()(hidden)))
    parallel = parallel_keras.multi_gpu_model(template, gpus=REPLICAS)
    parallel.compile(optimizer="sgd", loss="mse")
    ops = _step_op_devices(parallel, _train)
    # The forward op of every replica (TensorFlow places gradient ops itself).
    pinned = {
        r.device
        for r in ops.traced
        if "pinned_by_call" in r.name
        and not r.name.startswith("gradient_tape")
        and r.op_type == "Mul"
    }
    assert pinned == {"/cpu:0"}, pinned
    assert (
        sum(
            1
            for r in ops.traced
            if "pinned_by_call" in r.name
            and not r.name.startswith("gradient_tape")
            and r.op_type == "Mul"
        )
        == 3
    )
    hidden_counts = ops.device_counts("hidden_", traced=True)
    hidden_counts.pop(None, None)
    assert set(hidden_counts) == REPLICA_DEVICES, hidden_counts
