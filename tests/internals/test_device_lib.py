# SPDX-License-Identifier: Apache-2.0
"""Canary for `parallel_keras._internals.device_lib`: TensorFlow's private device listing."""

import inspect

import tensorflow as tf

from parallel_keras import _internals


def test_tensorflows_device_lib_lists_the_physical_devices_as_device_attributes():
    # tensorflow/python/client/device_lib.py (identical in TF 2.16.2 and 2.21.0):
    # Keras 2's `K.device_lib`, kept as parallel_keras.compat.device_lib.
    from tensorflow.python.client import device_lib

    assert list(inspect.signature(device_lib.list_local_devices).parameters) == ["session_config"]
    devices = _internals.list_local_devices()
    physical = tf.config.list_physical_devices()
    assert [device.device_type for device in devices] == [d.device_type for d in physical]
    assert devices[0].name == "/device:CPU:0"
    assert devices[0].memory_limit > 0
    assert isinstance(devices[0].physical_device_desc, str)


def test_tensorflows_device_lib_applies_a_session_config():
    config = tf.compat.v1.ConfigProto(device_count={"CPU": 1})
    assert [device.name for device in _internals.list_local_devices(config)] == ["/device:CPU:0"]
