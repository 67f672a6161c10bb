# SPDX-License-Identifier: Apache-2.0
"""place_branches: finds independent branches and balances them over devices."""

import helpers
import keras
import numpy as np
import pytest

helpers.skip_module_without_placement()

import parallel_keras  # noqa: E402
from parallel_keras.device_placement import branches as branches_lib  # noqa: E402
from parallel_keras.testing import record_op_devices  # noqa: E402


def seed_model():
    input_a = keras.Input((10, 8), name="input_a")
    input_b = keras.Input((10, 8), name="input_b")
    shared_lstm = keras.layers.LSTM(4, name="shared_lstm")
    merged = keras.layers.concatenate([shared_lstm(input_a), shared_lstm(input_b)], name="merge")
    outputs = keras.layers.Dense(5, name="head")(merged)
    return keras.Model([input_a, input_b], outputs)


def towers_model():
    """One input, a shared stem, three towers of 4224, 40 and 80 parameters."""
    inputs = keras.Input((4,), name="x")
    stem = keras.layers.Dense(4, name="stem")(inputs)
    big = keras.layers.Dense(64, name="big_1")(stem)
    big = keras.layers.Dense(60, name="big_2")(big)
    small = keras.layers.Dense(8, name="small")(stem)
    medium = keras.layers.Dense(16, name="medium")(stem)
    merged = keras.layers.concatenate([big, small, medium], name="merge")
    outputs = keras.layers.Dense(2, name="head")(merged)
    return keras.Model(inputs, outputs)


def devices_by_layer(model):
    return {(c.layer, c.call_index): c.device for c in parallel_keras.placement(model)}


def test_seed_model_branches_go_to_one_device_each_and_run_there():
    model = parallel_keras.place_branches(seed_model(), ["/gpu:1", "/gpu:2"], merge_device="/cpu:0")
    assert devices_by_layer(model) == {
        ("shared_lstm", 0): "/gpu:1",
        ("shared_lstm", 1): "/gpu:2",
        ("merge", 0): "/cpu:0",
        ("head", 0): "/cpu:0",
    }
    x = [np.ones((2, 10, 8), np.float32)] * 2
    with record_op_devices() as ops:
        model(x)
    ran = {r.device for r in ops.eager if "shared_lstm" in r.name and r.op_type != "ReadVariableOp"}
    assert ran == {"/cpu:1", "/cpu:2"}


def test_towers_are_balanced_by_parameter_count():
    model = towers_model()
    branches = branches_lib.find_branches(model)
    assert len(branches) == 3
    parallel_keras.place_branches(model, ["/cpu:1", "/cpu:2"])
    placed = devices_by_layer(model)
    # The big tower alone outweighs the two others: it gets a device alone.
    assert placed[("big_1", 0)] == placed[("big_2", 0)] == "/cpu:1"
    assert placed[("small", 0)] == placed[("medium", 0)] == "/cpu:2"
    # The stem before the split and the merge after it are trunk.
    assert placed[("stem", 0)] is None
    assert placed[("merge", 0)] is None and placed[("head", 0)] is None


def test_more_devices_than_branches_and_replacing_a_previous_placement():
    model = seed_model()
    parallel_keras.place_branches(model, ["/cpu:3", "/cpu:2", "/cpu:1"], merge_device="/cpu:1")
    parallel_keras.place_branches(model, ["/cpu:1", "/cpu:2", "/cpu:3"])
    assert devices_by_layer(model) == {
        ("shared_lstm", 0): "/cpu:1",
        ("shared_lstm", 1): "/cpu:2",
        ("merge", 0): None,
        ("head", 0): None,
    }


def chain_model():
    inputs = keras.Input((3,))
    with parallel_keras.device("/cpu:1"):
        hidden = keras.layers.Dense(4)(inputs)
    return keras.Model(inputs, keras.layers.Dense(2)(hidden))


@pytest.mark.parametrize(
    "build, devices, error, message",
    [
        (chain_model, ["/cpu:1", "/cpu:2"], ValueError, "at least 2 independent branches"),
        (seed_model, ["/cpu:1", "/cpu:1"], ValueError, "each device once"),
        (seed_model, "/cpu:1", TypeError, "list of device strings"),
        (seed_model, [], ValueError, "at least one device"),
        (seed_model, ["/cpu:1", "/gpu:9"], ValueError, "does not exist"),
    ],
)
def test_bad_requests_fail_and_leave_the_model_as_it_was(build, devices, error, message):
    model = build()
    before = parallel_keras.placement(model)
    with pytest.raises(error, match=message):
        parallel_keras.place_branches(model, devices)
    assert parallel_keras.placement(model) == before
