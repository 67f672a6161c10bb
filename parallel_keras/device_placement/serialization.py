# SPDX-License-Identifier: Apache-2.0
"""Placement that survives `.keras` (and JSON config) save and load.

A placed functional model's config gets one extra top-level key,
`"parallel_keras_placement"`: for each layer with a placed call, the device
of each of its calls in call order (null for default placement), e.g.
`{"lstm": ["/gpu:0", "/gpu:1"], "concatenate": ["/cpu:0"]}`. Unplaced models
keep exactly the config Keras writes. Loading with parallel_keras's
placement imported restores the devices; plain Keras ignores the key and
loads the model on default placement.
"""

from __future__ import annotations

from typing import Any, cast

import keras
from absl import logging

from parallel_keras import _internals
from parallel_keras._internals import interceptions
from parallel_keras.device_placement import runtime

CONFIG_KEY = "parallel_keras_placement"


def placement_config(model: keras.Model) -> dict[str, list[str | None]] | None:
    """The placement to save with `model`, or None if nothing is placed."""
    by_layer: dict[str, list[str | None]] = {}
    placed = False
    for layer, call_index, node in _internals.functional_layer_calls(model):
        name = runtime.requested_device(node)
        placed = placed or name is not None
        # functional_layer_calls yields Keras layers (typed `object` there).
        calls = by_layer.setdefault(cast(keras.layers.Layer, layer).name, [])
        calls.extend([None] * (call_index + 1 - len(calls)))
        calls[call_index] = name
    if not placed:
        return None
    return {
        layer: calls for layer, calls in by_layer.items() if any(name is not None for name in calls)
    }


def apply_placement_config(model: keras.Model, value: Any) -> None:
    """Restores a placement saved by `placement_config` on a loaded model.

    Raises:
        ValueError: If the saved placement is malformed or names layer calls
            the model does not have (the file was edited or corrupted).
    """
    if not isinstance(value, dict) or not all(
        isinstance(calls, list) and all(name is None or isinstance(name, str) for name in calls)
        for calls in value.values()
    ):
        raise ValueError(
            f"The model config's {CONFIG_KEY!r} must map layer names to lists "
            f"of device strings (or null). Received: {value!r}. Remove the "
            "key from the config to load the model on default placement."
        )
    nodes = {
        (cast(keras.layers.Layer, layer).name, call_index): node
        for layer, call_index, node in _internals.functional_layer_calls(model)
    }
    placed = {}
    for layer_name, calls in value.items():
        for call_index, name in enumerate(calls):
            if name is None:
                continue
            node = nodes.get((layer_name, call_index))
            if node is None:
                raise ValueError(
                    f"The model config's {CONFIG_KEY!r} places call "
                    f"{call_index} of layer {layer_name!r}, which the model "
                    f"does not have. Received: {value!r}. Remove the key "
                    "from the config to load the model on default placement."
                )
            placed[node] = name
    for node, name in placed.items():
        runtime.set_requested_device(node, name)
    logging.info(
        "parallel_keras: restored the placement of %d layer call(s) of %r.",
        len(placed),
        model.name,
    )


def install_save_hook(when: str) -> None:
    """Writes a placed model's devices into its config from now on."""
    _internals.install_functional_config_hooks(CONFIG_KEY, save=placement_config, when=when)


# Loading must restore a saved placement on a plain `keras.models.load_model`
# from the first call, before anything was placed in this process.
_internals.install_functional_config_hooks(
    CONFIG_KEY, load=apply_placement_config, when=interceptions.AT_KERAS_IMPORT
)
