# SPDX-License-Identifier: Apache-2.0
"""The parallel model's `layers`, at the positions Keras 2's had them.

Keras 2's `multi_gpu_model` (keras/utils/multi_gpu_utils.py, Keras 2.3)
returned `Model(template.inputs, merged)`: for each replica a `Lambda` slicing
each input, the template called on the slices, and one `Concatenate` per
output named after it. Its `layers`, ordered by depth and then by the order
a walk back from the outputs met them (`_map_graph_network`, engine/
network.py), were:

    [*input layers,
     *slice layers (replica 0: input 0, 1, ...; replica 1: input 0, ...),
     template,
     *merge layers (one per output, in output order)]

Scripts reach the template by position (`model.layers[-2]`,
`model.layers[-(len(model.outputs) + 1)]`, `model.layers[gpus + 1]`), so the
parallel model lists the same layers. The slice and merge layers hold no
weights and are not tracked by the parallel model (its weights, summary and
saving are the template's); calling them slices and concatenates as Keras 2's
did.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from parallel_keras import _internals


class _Keras2Layers:
    """Holds the layers out of Keras's attribute tracking (not a list or Layer)."""

    def __init__(self, layers: list):
        self.layers = layers


def _slice(data, index: int, parts: int):
    """Replica `index`'s rows of `data` (the last replica takes the rest)."""
    rows = keras.ops.shape(data)[0]
    step = rows // parts
    stop = rows if index == parts - 1 else step * (index + 1)
    return data[step * index : stop]


def keras2_layers(template: keras.Model, output_names: list[str], replicas: int) -> list:
    """The layers of a Keras 2 parallel model of `template` on `replicas` devices."""
    inputs = _symbolic_layers(template, "inputs")
    output_names = output_names or template_output_names(template)
    slices = [
        keras.layers.Lambda(
            _slice,
            arguments={"index": replica, "parts": replicas},
            name=f"replica_{replica}_slice_{position}",
        )
        for replica in range(replicas)
        for position in range(max(len(inputs), 1))
    ]
    merges = [keras.layers.Concatenate(axis=0, name=name) for name in output_names] or [
        keras.layers.Concatenate(axis=0, name=f"{template.name}_merge")
    ]
    return [*inputs, *slices, template, *merges]


def template_output_names(template: keras.Model) -> list[str]:
    """The template's output names as Keras 2 had them: `output_names`, or
    for a model without them (a Sequential) its output layers' names."""
    names = getattr(template, "output_names", None)
    if names:
        return list(names)
    return [layer.name for layer in _symbolic_layers(template, "outputs")]


def _symbolic_layers(template: keras.Model, attribute: str) -> list:
    try:
        tensors = keras.tree.flatten(getattr(template, attribute))
    except (AttributeError, ValueError):
        return []  # A subclassed template never called symbolically.
    return [_internals.keras_tensor_layer(tensor) for tensor in tensors]


def cached_keras2_layers(model: keras.Model) -> list:
    """`keras2_layers` for a parallel model, built once and kept on it."""
    held = model.__dict__.get("_keras2_layers_held")
    if held is None:
        held = _Keras2Layers(
            keras2_layers(
                model.template,
                list(getattr(model, "output_names", None) or []),
                len(model.replica_devices),
            )
        )
        # Past Keras's attribute tracking: these layers are not the model's.
        model.__dict__["_keras2_layers_held"] = held
    return list(held.layers)


class Keras2Surface:
    """What scripts read off Keras 2's parallel model: the template's symbolic
    inputs and outputs, their names, and `layers` at Keras 2's positions.

    Mixed into `ParallelModel`, which holds the template as `_template`.
    """

    _template: keras.Model

    @property
    def inputs(self) -> list:
        """The template's symbolic inputs."""
        return self._symbolic("inputs")

    @property
    def outputs(self) -> list:
        """The template's symbolic outputs."""
        return self._symbolic("outputs")

    @property
    def input(self) -> Any:
        """The template's symbolic input (a list for several inputs)."""
        return self._symbolic("input")

    @property
    def output(self) -> Any:
        """The template's symbolic output (a list for several outputs)."""
        return self._symbolic("output")

    @property
    def input_names(self) -> list[str]:
        """Names of the template's input layers, in order (as Keras 2 had them)."""
        return [
            _internals.keras_tensor_layer(tensor).name for tensor in tf.nest.flatten(self.inputs)
        ]

    def _symbolic(self, attribute: str):
        try:
            return getattr(self._template, attribute)
        except (AttributeError, ValueError) as error:
            raise AttributeError(
                f"The parallel model's `{attribute}` are its template's, and "
                f"the template {self._template.name!r} has none: it is a "
                "subclassed model that was never called on a symbolic input. "
                f"Received: parallel_model.{attribute}. Build the template "
                "with the functional API (keras.Model(inputs, outputs)) to "
                "have symbolic inputs and outputs."
            ) from error

    @property
    def layers(self) -> list:
        """Keras 2's layers: inputs, slice layers, the template, merge layers.

        At the positions Keras 2's parallel model had them, so
        `layers[-2]` (one output), `layers[-(len(outputs) + 1)]` and
        `layers[gpus + 1]` (one input) are the template; see
        `keras2_layers`. Only the template holds weights.
        """
        return cached_keras2_layers(self)
