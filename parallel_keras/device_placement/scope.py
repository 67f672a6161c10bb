# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.device`, and `tf.device`, remembered by functional models.

Legacy device-parallel scripts build a model with `with tf.device('/gpu:0'):`
around one branch and `'/gpu:1'` around another. Keras 3 replays layer calls
outside those scopes, so the placement is silently lost. `device` is the
drop-in replacement: it is `tf.device` (variables and eager ops inside it land
on the device) and it also records each layer call made inside it while a
functional model is built, which `runtime` then replays on that device.

With parallel_keras imported, a plain `tf.device` scope open while a layer
call is made is recorded the same way (the innermost scope wins, whichever
kind), so a legacy script whose only change is the import keeps its
placement: `'/gpu:1'` is recorded as `'/gpu:1'`, exactly what
`parallel_keras.device('/gpu:1')` records. A scope this process cannot place
on (a device it lacks, another process's device) is not recorded; the first
call of such a layer logs a warning saying what to write instead.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import tensorflow as tf

from parallel_keras import _internals, devices
from parallel_keras._internals import interceptions
from parallel_keras._internals import placement as internal_placement
from parallel_keras.device_placement import runtime

_scopes = threading.local()


def _open_scopes() -> list[str]:
    if not hasattr(_scopes, "names"):
        _scopes.names = []
    return _scopes.names


def current_device() -> str | None:
    """The device of the innermost open `parallel_keras.device` scope."""
    names = _open_scopes()
    return names[-1] if names else None


@contextlib.contextmanager
def device(name: str) -> Iterator[None]:
    """Places ops like `tf.device`, and layer calls of a functional model too.

    Layer calls made inside this scope while building a functional model run
    on `name` whenever the built model runs: eager calls, `predict`,
    `evaluate` and `fit`'s compiled train step, and after a `.keras`
    save/load with parallel_keras imported. A layer shared across scopes runs
    each call on that call's device with one set of weights. The innermost
    scope wins; calls outside any scope keep default placement. On a machine
    without GPUs where `simulate_devices(n)` made logical CPU devices,
    `'/gpu:i'` means simulated CPU device `i`.

    Args:
        name: A device string such as `'/gpu:1'`, `'/device:GPU:1'` or
            `'/cpu:0'`.

    Yields:
        None.

    Raises:
        TypeError: If `name` is not a string.
        ValueError: If `name` is malformed or names a device this machine
            does not have (the message lists the devices it has).

    Example:

    >>> import keras, parallel_keras
    >>> input_a, input_b = keras.Input((10, 8)), keras.Input((10, 8))
    >>> shared_lstm = keras.layers.LSTM(4)
    >>> with parallel_keras.device('/cpu:0'):
    ...     encoded_a = shared_lstm(input_a)
    >>> encoded_b = shared_lstm(input_b)
    >>> model = keras.Model([input_a, input_b], [encoded_a, encoded_b])
    >>> sorted((c.call_index, c.device) for c in parallel_keras.placement(model))
    [(0, '/cpu:0'), (1, None)]
    """
    resolved = devices.resolve_device(name)
    if not interceptions.is_installed(internal_placement.NODE_INIT):
        # Removed through the interceptions listing: this scope needs it back.
        _install_recorder()
    names = _open_scopes()
    with tf.device(resolved):
        names.append(name)
        try:
            yield
        finally:
            names.pop()


def _record_layer_call(node: object) -> None:
    name = current_device()
    scoped = _internals.tf_device_scope()
    if scoped is None or (name is not None and _same_device(scoped, devices.resolve_device(name))):
        if name is not None:
            runtime.set_requested_device(node, name)
        return
    # A tf.device scope: outside any parallel_keras.device, or inside one.
    spec = tf.DeviceSpec.from_string(scoped)
    if spec.device_type is None:
        return  # `tf.device('/job:localhost')`: no device to place on
    written = f"/{spec.device_type.lower()}:{spec.device_index or 0}"
    if spec.job not in (None, "localhost") or spec.replica or spec.task:
        reason = "It names another process's device, where this process's layers cannot run."
        runtime.set_ignored_scope(node, scoped, reason)
        return
    try:
        devices.resolve_device(written)
    except ValueError as error:
        runtime.set_ignored_scope(node, written, str(error))
        return
    runtime.set_requested_device(node, written)


def _same_device(first: str, second: str) -> bool:
    return tf.DeviceSpec.from_string(first) == tf.DeviceSpec.from_string(second)


def _install_recorder() -> None:
    _internals.install_node_created_hook(_record_layer_call, when=interceptions.AT_KERAS_IMPORT)


# A legacy script never calls parallel_keras: its `tf.device` scopes can only
# be seen while its model is built, so this is installed with Keras.
_install_recorder()
