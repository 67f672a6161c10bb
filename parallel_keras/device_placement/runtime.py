# SPDX-License-Identifier: Apache-2.0
"""Runs each recorded layer call of a functional model on its device.

A Keras 3 functional model keeps one record (a node) per layer call made
while it was built and replays those calls whenever it runs: in an eager
call, in `predict` and `evaluate`, and while `fit` traces its train step.
`tf.device` scopes around the building code are gone by then. This module
keeps, for each recorded call, the device it asked for, and hooks the replay
so that the call runs inside `tf.device(<that device>)`. Calls without a
device run wherever the caller's own device scope puts them, as under
`tf.device`.

The device is stored as the user wrote it (`'/gpu:1'`) and resolved with
`parallel_keras.devices.resolve_device` when the call runs, so a saved model
names GPUs and still rehearses on simulated CPU devices.
"""

from __future__ import annotations

import weakref
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from parallel_keras import _internals, devices
from parallel_keras._internals import interceptions
from parallel_keras._internals import placement as internal_placement

# node -> device name as written by the user. Weak, so a discarded model's
# records go with it.
_REQUESTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# The strategies of `multi_gpu_model`s: inside one of their replicas every
# layer call runs on the replica's device (see `replicas`).
_REPLICA_STRATEGIES: weakref.WeakSet = weakref.WeakSet()

SUPPORTED_MODELS_HINT = (
    "Device placement works on functional models, built as "
    "keras.Model(inputs=..., outputs=...). In a subclassed model, put "
    "`with tf.device(...)` inside `call()`, where it takes effect; rebuild a "
    "Sequential model with the functional API to give it branches."
)


# node -> (tf.device scope it was built in, why it cannot be placed there),
# for a layer call built under a plain `tf.device` that cannot take effect.
_IGNORED_SCOPES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_WARNED_SCOPES: set[str] = set()


def set_ignored_scope(node: object, scope: str, reason: str) -> None:
    """Notes a layer call built under a `tf.device` scope that cannot apply."""
    _ensure_call_time_hooks()  # Its warning is logged when the call runs.
    _IGNORED_SCOPES[node] = (scope, reason)


def _warn_ignored_scope(node: object, operation: Any) -> None:
    scope, reason = _IGNORED_SCOPES.pop(node)
    if scope in _WARNED_SCOPES:
        return
    _WARNED_SCOPES.add(scope)
    logging.warning(
        "Layer calls built inside `with tf.device(%r)` run on default "
        "placement (the first: %r): this process cannot place them there. %s "
        "Keras 2 ran them elsewhere silently (soft placement). To place "
        "them, build them inside parallel_keras.device(...) with one of this "
        "process's devices (listed above), or remove "
        "the scope.",
        scope,
        getattr(operation, "name", operation),
        reason,
    )


def requested_device(node: object) -> str | None:
    """The device a recorded layer call asked for, or None (default)."""
    return _REQUESTED.get(node)


def set_requested_device(node: object, name: str | None) -> None:
    """Records (or with None, clears) the device of one layer call."""
    if name is None:
        _REQUESTED.pop(node, None)
    else:
        _ensure_call_time_hooks()
        _REQUESTED[node] = name


def require_functional(model: Any, api: str) -> None:
    """Raises TypeError unless `model` is a functional Keras model."""
    if _internals.is_functional(model):
        return
    raise TypeError(
        f"{api} needs a functional Keras model. Received: model of type "
        f"{type(model).__name__}. {SUPPORTED_MODELS_HINT}"
    )


def layer_calls(model: keras.Model) -> list[tuple[Any, int, object]]:
    """`(layer, call_index, node)` for each layer call, in run order."""
    require_functional(model, "parallel_keras placement")
    return _internals.functional_layer_calls(model)


class _CallOnDevice:
    """Stands in for a layer (or op) and runs its call inside `tf.device`."""

    __slots__ = ("_operation", "_device_name")

    def __init__(self, operation: Any, device_name: str):
        self._operation = operation
        self._device_name = device_name

    def __call__(self, *args, **kwargs):
        try:
            resolved = devices.resolve_device(self._device_name)
        except ValueError as error:
            raise ValueError(
                f"Layer {getattr(self._operation, 'name', self._operation)!r} "
                f"was placed on device {self._device_name!r}, which this "
                f"process cannot use. {error} To run it on default placement "
                "instead, call parallel_keras.clear_placement(model)."
            ) from error
        with tf.device(resolved):
            return self._operation(*args, **kwargs)

    def __getattr__(self, name: str):
        # Keras reads call-context attributes (e.g. `_call_context_args`)
        # from the operation before calling it.
        return getattr(self._operation, name)


def follow_replica_devices(strategy: tf.distribute.Strategy) -> None:
    """Inside `strategy`'s replicas, recorded placements no longer apply."""
    _REPLICA_STRATEGIES.add(strategy)


def _in_parallel_replica() -> bool:
    if not _REPLICA_STRATEGIES or not tf.distribute.has_strategy():
        return False
    if tf.distribute.in_cross_replica_context():
        return False
    return tf.distribute.get_strategy() in _REPLICA_STRATEGIES


def _operation_for_node(node: object, operation: Any) -> Any:
    if _IGNORED_SCOPES and node in _IGNORED_SCOPES:
        _warn_ignored_scope(node, operation)
    device_name = _REQUESTED.get(node)
    if device_name is None or _in_parallel_replica():
        return operation
    return _CallOnDevice(operation, device_name)


def clear_placement(model: keras.Model) -> keras.Model:
    """Puts every layer call of a functional model back on default placement.

    Args:
        model: A functional Keras model.

    Returns:
        The same model, every layer call now on default placement.

    Raises:
        TypeError: If `model` is not a functional Keras model.

    Example:

    >>> import keras, parallel_keras
    >>> inputs = keras.Input((3,))
    >>> with parallel_keras.device('/cpu:0'):
    ...     outputs = keras.layers.Dense(2)(inputs)
    >>> model = parallel_keras.clear_placement(keras.Model(inputs, outputs))
    >>> parallel_keras.placement(model)[0].device is None
    True
    """
    require_functional(model, "clear_placement")
    for _, _, node in _internals.functional_layer_calls(model):
        set_requested_device(node, None)
    return model


# The hooks a recorded placement needs, installed when the first layer call
# is given a device: a script that never places a layer keeps Keras's
# `Function._get_operation_for_node` and `Functional.get_config` as shipped.
CALL_TIME_HOOKS_WHEN = (
    "at the first layer call given a device (parallel_keras.device, a "
    "tf.device scope, place_branches, or a placement loaded from a file)"
)


def _ensure_call_time_hooks() -> None:
    if interceptions.is_installed(
        internal_placement.OPERATION_FOR_NODE
    ) and interceptions.is_installed(internal_placement.GET_CONFIG):
        return
    # Imported here: `serialization` imports this module.
    from parallel_keras.device_placement import serialization

    _internals.install_operation_for_node_hook(_operation_for_node, when=CALL_TIME_HOOKS_WHEN)
    serialization.install_save_hook(when=CALL_TIME_HOOKS_WHEN)
