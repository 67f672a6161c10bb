# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.device: layer calls of a functional model run where asked.

Checked where ops really ran (parallel_keras.testing.record_op_devices), not
only what was asked, on 3 of the 4 simulated CPU devices from conftest.
"""

import contextlib

import helpers
import keras
import numpy as np
import pytest
import tensorflow as tf

helpers.skip_module_without_placement()

import parallel_keras  # noqa: E402
from parallel_keras.devices import short_device_name  # noqa: E402
from parallel_keras.testing import record_op_devices  # noqa: E402

BRANCH_A, BRANCH_B, MERGE = "/gpu:1", "/gpu:2", "/cpu:0"
# '/gpu:i' rehearses on simulated CPU device i (no GPU here).
RAN_A, RAN_B, RAN_MERGE = "/cpu:1", "/cpu:2", "/cpu:0"
# Reads of a variable run where the variable lives (tf.device semantics: the
# shared LSTM's weights were created in branch A's scope), not where the
# call was placed.
VARIABLE_READS = {"ReadVariableOp", "VarHandleOp", "Placeholder", "NoOp"}


def build_two_branch(place: bool, timesteps: int = 10, features: int = 8, units: int = 4):
    """The legacy tutorials' shared-LSTM model, small; placed with parallel_keras.device."""
    keras.utils.set_random_seed(7)
    scope = parallel_keras.device if place else (lambda name: contextlib.nullcontext())
    input_a = keras.Input(shape=(timesteps, features), name="input_a")
    input_b = keras.Input(shape=(timesteps, features), name="input_b")
    shared_lstm = keras.layers.LSTM(units, name="shared_lstm")
    with scope(BRANCH_A):
        encoded_a = shared_lstm(input_a)
    with scope(BRANCH_B):
        encoded_b = shared_lstm(input_b)
    with scope(MERGE):
        merged = keras.layers.concatenate([encoded_a, encoded_b], axis=-1, name="merge")
    outputs = keras.layers.Dense(5, activation="softmax", name="head")(merged)
    model = keras.Model(inputs=[input_a, input_b], outputs=outputs)
    encoders = keras.Model([input_a, input_b], [encoded_a, encoded_b])
    return model, encoders


def data(rows: int = 6, timesteps: int = 10, features: int = 8):
    rng = np.random.default_rng(0)
    x = [rng.random((rows, timesteps, features), dtype=np.float32) for _ in range(2)]
    y = keras.utils.to_categorical(np.arange(rows) % 5, 5)
    return x, y


def contiguous_devices(records, name_contains):
    """Devices of the matching compute ops, one entry per contiguous run."""
    runs = []
    for record in records:
        if name_contains not in record.name or record.op_type in VARIABLE_READS:
            continue
        if not runs or runs[-1] != record.device:
            runs.append(record.device)
    return runs


def compute_devices(records, name_contains):
    """Devices where the matching eager ops, variable reads aside, ran."""
    return {
        record.device
        for record in records
        if name_contains in record.name and record.op_type not in VARIABLE_READS
    }


def producing_op(tensor):
    """The op computing a traced output, looking through tf.function's Identity."""
    op = tensor.op
    while op.type == "Identity" and not op.device:
        op = op.inputs[0].op
    return op


def traced_call_devices(records, layer):
    """{call scope: set of pinned devices} for a layer's forward ops."""
    scopes = {}
    for record in records:
        parts = record.name.split("/")
        if "gradient_tape" in parts or len(parts) < 3:
            continue
        if not parts[1].startswith(layer) or record.op_type in VARIABLE_READS:
            continue
        scopes.setdefault(parts[1], set()).add(record.device)
    return scopes


def test_report_lists_the_device_each_call_asked_for():
    model, _ = build_two_branch(place=True)
    assert [(c.layer, c.call_index, c.device) for c in parallel_keras.placement(model)] == [
        ("shared_lstm", 0, BRANCH_A),
        ("shared_lstm", 1, BRANCH_B),
        ("merge", 0, MERGE),
        ("head", 0, None),
    ]


def test_eager_call_runs_each_branch_on_its_device():
    model, encoders = build_two_branch(place=True)
    x, _ = data()
    with record_op_devices() as ops:
        model(x)
    # Each call of the shared LSTM runs as one block of ops on its device.
    assert sorted(contiguous_devices(ops.eager, "shared_lstm")) == [RAN_A, RAN_B]
    assert set(ops.device_counts("merge", traced=False)) == {RAN_MERGE}
    # The per-branch outputs live on the branch's device.
    encoded_a, encoded_b = encoders(x)
    assert short_device_name(encoded_a.device) == RAN_A
    assert short_device_name(encoded_b.device) == RAN_B


def test_unplaced_model_runs_on_the_default_device():
    model, _ = build_two_branch(place=False)
    x, _ = data()
    with record_op_devices() as ops:
        model(x)
    assert compute_devices(ops.eager, "shared_lstm") == {"/cpu:0"}


def test_predict_evaluate_and_fit_step_place_each_branch_and_match_unplaced():
    placed, placed_encoders = build_two_branch(place=True)
    plain, _ = build_two_branch(place=False)
    x, y = data()
    np.testing.assert_allclose(placed(x), plain(x), atol=1e-5)

    with record_op_devices() as ops:
        predicted = placed.predict(x, batch_size=6, verbose=0)
    np.testing.assert_allclose(predicted, plain.predict(x, batch_size=6, verbose=0), atol=1e-5)
    lstm_calls = traced_call_devices(ops.traced, "shared_lstm")
    assert sorted(map(tuple, lstm_calls.values())) == [(RAN_A,), (RAN_B,)]
    assert list(traced_call_devices(ops.traced, "merge").values()) == [{RAN_MERGE}]

    for model in (placed, plain):
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="categorical_crossentropy")
    with record_op_devices() as ops:
        placed.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    plain.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    lstm_calls = traced_call_devices(ops.traced, "shared_lstm")
    assert sorted(map(tuple, lstm_calls.values())) == [(RAN_A,), (RAN_B,)]
    for placed_weight, plain_weight in zip(placed.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(placed_weight, plain_weight, atol=1e-5)
    np.testing.assert_allclose(
        placed.evaluate(x, y, batch_size=6, verbose=0),
        plain.evaluate(x, y, batch_size=6, verbose=0),
        atol=1e-5,
    )
    # Which call went where, in a traced function: the outputs' pinned devices.
    traced = tf.function(lambda a, b: placed_encoders([a, b]))
    graph = traced.get_concrete_function(
        tf.TensorSpec((None, 10, 8)), tf.TensorSpec((None, 10, 8))
    ).graph
    assert [
        short_device_name(producing_op(tensor).device) for tensor in graph.structured_outputs
    ] == [RAN_A, RAN_B]


def test_shared_layer_keeps_one_set_of_weights():
    model, _ = build_two_branch(place=True)
    lstm = model.get_layer("shared_lstm")
    assert len(lstm.weights) == 3
    assert len(model.weights) == len(lstm.weights) + 2


def test_nested_scopes_innermost_wins_and_outer_applies_again():
    inputs = keras.Input((3,))
    with parallel_keras.device("/cpu:1"):
        first = keras.layers.Dense(2, name="outer_first")(inputs)
        with parallel_keras.device("/cpu:2"):
            inner = keras.layers.Dense(2, name="inner")(first)
        last = keras.layers.Dense(2, name="outer_last")(inner)
    outputs = keras.layers.Dense(2, name="unplaced")(last)
    model = keras.Model(inputs, outputs)
    with record_op_devices() as ops:
        model(np.ones((2, 3), np.float32))
    expected = {"outer_first": "/cpu:1", "inner": "/cpu:2", "outer_last": "/cpu:1"}
    for layer, ran_on in expected.items():
        assert compute_devices(ops.eager, layer) == {ran_on}, layer
    # Unplaced calls follow the caller's scope, as under tf.device.
    with record_op_devices() as ops, tf.device("/cpu:3"):
        model(np.ones((2, 3), np.float32))
    assert compute_devices(ops.eager, "unplaced") == {"/cpu:3"}
    assert compute_devices(ops.eager, "inner") == {"/cpu:2"}


def test_scope_also_acts_as_tf_device_for_eager_ops_and_variables():
    with parallel_keras.device("/gpu:2"):
        value = tf.constant(1.0) + 1.0
        variable = tf.Variable(1.0)
    assert value.device.endswith("CPU:2")
    assert variable.device.endswith("CPU:2")


def test_seed_example_runs_with_only_tf_device_replaced():
    # The legacy tutorials' code (000/003/004), with tf.device / tf.device_scope replaced
    # by parallel_keras.device and nothing else changed.
    input_a = keras.Input(shape=(140, 256))
    input_b = keras.Input(shape=(140, 256))

    shared_lstm = keras.layers.LSTM(64)

    with parallel_keras.device("/device:GPU:0"):
        encoded_a = shared_lstm(input_a)
    with parallel_keras.device("/device:GPU:1"):
        encoded_b = shared_lstm(input_b)

    with parallel_keras.device("/cpu:0"):
        merged_vector = keras.layers.concatenate([encoded_a, encoded_b], axis=-1)

    fc1 = keras.layers.Dense(50, activation="softmax")(merged_vector)

    model = keras.Model(inputs=[input_a, input_b], outputs=fc1)

    x = [np.ones((2, 140, 256), np.float32)] * 2
    with record_op_devices() as ops:
        probabilities = model(x)
    assert probabilities.shape == (2, 50)
    runs = contiguous_devices(ops.eager, shared_lstm.name)
    assert sorted(runs) == ["/cpu:0", "/cpu:1"]
    assert [c.device for c in parallel_keras.placement(model)][:2] == [
        "/device:GPU:0",
        "/device:GPU:1",
    ]


@pytest.mark.parametrize(
    "name, error, message",
    [
        ("/gpu:7", ValueError, "does not exist"),
        ("/cpu:9", ValueError, "Available devices"),
        ("/gpu:zero", ValueError, "Malformed device string"),
        ("gpu0", ValueError, "device"),
        (1, TypeError, "must be a string"),
    ],
)
def test_bad_device_fails_when_the_scope_opens(name, error, message):
    with pytest.raises(error, match=message):
        with parallel_keras.device(name):
            pass


def test_missing_device_at_call_time_names_the_layer_and_the_fix():
    inputs = keras.Input((3,))
    with parallel_keras.device("/cpu:1"):
        outputs = keras.layers.Dense(2, name="far_away")(inputs)
    model = keras.Model(inputs, outputs)
    config = model.get_config()
    config["parallel_keras_placement"] = {"far_away": ["/gpu:9"]}
    loaded = keras.Model.from_config(config)
    with pytest.raises(ValueError, match=r"far_away.*'/gpu:9'.*clear_placement"):
        loaded(np.ones((1, 3), np.float32))
    parallel_keras.clear_placement(loaded)
    assert loaded(np.ones((1, 3), np.float32)).shape == (1, 2)


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)

    def call(self, inputs):
        return self.dense(inputs)


@pytest.mark.parametrize(
    "api",
    [
        parallel_keras.placement,
        parallel_keras.clear_placement,
        lambda model: parallel_keras.place_branches(model, ["/cpu:0", "/cpu:1"]),
    ],
)
@pytest.mark.parametrize(
    "model", [_Subclassed(), keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])]
)
def test_non_functional_models_are_refused_with_what_is_supported(api, model):
    with pytest.raises(TypeError, match=r"functional Keras model.*Received: model of type"):
        api(model)
