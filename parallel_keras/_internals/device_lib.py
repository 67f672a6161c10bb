# SPDX-License-Identifier: Apache-2.0
"""TensorFlow's `device_lib`: the devices of this process, as Keras 2 listed them.

Keras 2's TensorFlow backend module imported
`tensorflow.python.client.device_lib`, so Keras 2 scripts called
`K.device_lib.list_local_devices()`; `parallel_keras.compat.device_lib`
keeps that name. The module is private to TensorFlow (no `tf.*` name,
also not under `tf.compat.v1`); its one function, `list_local_devices
(session_config=None)`, returns `DeviceAttributes` protos (`name`,
`device_type`, `memory_limit`, `physical_device_desc`). The file is
byte-identical in TensorFlow 2.16.2 and 2.21.0. Canary:
tests/internals/test_device_lib.py.
"""

from __future__ import annotations

from typing import Any


def list_local_devices(session_config: Any = None) -> list[Any]:
    """TensorFlow's `device_lib.list_local_devices(session_config)`."""
    from tensorflow.python.client import device_lib

    return device_lib.list_local_devices(session_config)
