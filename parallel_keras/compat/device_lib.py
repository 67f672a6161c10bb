# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `K.device_lib`: the devices of this process, as TensorFlow lists them.

Keras 2's TensorFlow backend module imported TensorFlow's `device_lib`, so
Keras 2 scripts wrote `K.device_lib.list_local_devices()` or
`from keras.backend.tensorflow_backend import device_lib`; Keras 3's
`keras.backend` has no `device_lib`. This module is that one: the same
`DeviceAttributes` protos (`name` such as `'/device:CPU:0'`, `device_type`,
`memory_limit`, `physical_device_desc`) for the physical devices of the
process; devices split into logical ones (`parallel_keras.simulate_devices`)
are not among them, as they were not in Keras 2.

To modernise: `tf.config.list_logical_devices()` (each with `name` and
`device_type`), or `tf.config.list_physical_devices()`; the memory and
description of a GPU: `tf.config.experimental.get_device_details(device)`.
"""

from __future__ import annotations

from typing import Any

from parallel_keras import _internals


def list_local_devices(session_config: Any = None) -> list[Any]:
    """The devices of this process, as `DeviceAttributes` protos (TensorFlow's `device_lib`).

    Args:
        session_config: A `tf.compat.v1.ConfigProto` whose `device_count`
            (and the rest) the listing applies, or None for the default
            config. Defaults to None.

    Returns:
        A list of `DeviceAttributes` protos, the CPU first.

    Example:

    >>> from parallel_keras.compat import device_lib
    >>> device_lib.list_local_devices()[0].name
    '/device:CPU:0'
    """
    return _internals.list_local_devices(session_config)
