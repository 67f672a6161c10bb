# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.placement`: which device each layer call asked for.

The report states what was asked, not where ops ran; for the latter see
`parallel_keras.testing.record_op_devices`.
"""

from __future__ import annotations

import dataclasses

import keras

from parallel_keras.device_placement import runtime


@dataclasses.dataclass(frozen=True)
class LayerCallPlacement:
    """The device one layer call of a functional model asked for.

    Attributes:
        layer: The layer's name.
        call_index: Which call of that layer within the model (0 for the
            first; a shared layer has one per call). The same before saving
            and after loading.
        device: The device as written (`'/gpu:1'`), or None for default
            placement.
    """

    layer: str
    call_index: int
    device: str | None


def placement(model: keras.Model) -> list[LayerCallPlacement]:
    """Reports, for each layer call of a functional model, its device.

    Args:
        model: A functional Keras model.

    Returns:
        One `LayerCallPlacement` per layer call, in the order the model runs
        them (input layers are not listed).

    Raises:
        TypeError: If `model` is not a functional Keras model (e.g. a
            subclassed or Sequential model).

    Example:

    >>> import keras, parallel_keras
    >>> inputs = keras.Input((3,))
    >>> with parallel_keras.device('/cpu:0'):
    ...     hidden = keras.layers.Dense(4, name='hidden')(inputs)
    >>> outputs = keras.layers.Dense(2, name='head')(hidden)
    >>> parallel_keras.placement(keras.Model(inputs, outputs))
    [LayerCallPlacement(layer='hidden', call_index=0, device='/cpu:0'), \
LayerCallPlacement(layer='head', call_index=0, device=None)]
    """
    runtime.require_functional(model, "parallel_keras.device_placement")
    return [
        LayerCallPlacement(
            layer=layer.name,
            call_index=call_index,
            device=runtime.requested_device(node),
        )
        for layer, call_index, node in runtime.layer_calls(model)
    ]
