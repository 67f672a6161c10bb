# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.testing.record_op_devices: where ops really ran."""

import pytest
import tensorflow as tf

from parallel_keras.devices import short_device_name
from parallel_keras.testing import record_op_devices


@pytest.mark.parametrize("device", ["/cpu:1", "/cpu:3"])
def test_eager_ops_are_recorded_where_they_ran(device):
    with record_op_devices() as ops:
        with tf.device(device), tf.name_scope("tagged"):
            tf.square(tf.constant([1.0, 2.0]) * 3.0)  # Mul, Square.
    assert ops.device_counts("tagged", traced=False) == {device: 2}
    assert all(not record.traced for record in ops.eager)


def test_traced_ops_report_their_pinned_device_or_none():
    @tf.function
    def step(x):
        with tf.device("/cpu:2"):
            pinned = tf.multiply(x, 2.0, name="pinned")
        return tf.add(pinned, 1.0, name="free")

    with record_op_devices() as ops:
        step.get_concrete_function(tf.TensorSpec([2]))
    by_name = {record.name: record.device for record in ops.traced}
    assert by_name["pinned"] == "/cpu:2"
    assert by_name["free"] is None


def test_nothing_is_recorded_after_the_block():
    with record_op_devices() as ops:
        pass
    tf.constant(1.0) + 1.0
    assert ops.eager == [] and ops.traced == []


@pytest.mark.parametrize(
    "name, short",
    [
        ("/job:localhost/replica:0/task:0/device:CPU:2", "/cpu:2"),
        ("/device:GPU:1", "/gpu:1"),
        ("", None),
        ("/job:localhost", None),
    ],
)
def test_short_device_name(name, short):
    assert short_device_name(name) == short
