# SPDX-License-Identifier: Apache-2.0
"""Matching a weights file to a model: the shared pieces of both loaders.

`weights.py` (Keras 3 files, dispatching) and `legacy.py` (Keras 2 HDF5
files) both compare layers before assigning anything, report the first
mismatch the same way, and assign all or nothing.
"""

from __future__ import annotations

import keras
import numpy as np


class MismatchError(ValueError):
    """A weights file does not fit the model; the model was left unchanged."""


class NothingMatchedError(MismatchError):
    """No layer of the model matched the file by name: nothing was loaded."""


def weighted_layers(model: keras.Model) -> list[keras.layers.Layer]:
    """The layers holding weights, nested models flattened, in model order.

    Each layer once: a layer that a nested model holds and the model also
    calls directly is listed where it first appears.
    """
    found: list[keras.layers.Layer] = []
    seen: set[int] = set()

    def visit(container):
        for layer in getattr(container, "layers", []):
            if isinstance(layer, keras.Model):
                visit(layer)
            elif layer.weights and id(layer) not in seen:
                seen.add(id(layer))
                found.append(layer)

    visit(model)
    return found


def mismatch_message(
    path: str,
    model: keras.Model,
    model_layer: str,
    file_layer: str,
    model_shapes,
    file_shapes,
    extra: str = "",
) -> str:
    """The error for a file that does not fit a model."""
    return (
        f"The weights file does not match model {model.name!r}: its first "
        f"mismatching layer is {model_layer!r}, with weight shapes "
        f"{_shapes(model_shapes)} in the model and {_shapes(file_shapes)} in "
        f"the file's layer {file_layer!r}. {extra + ' ' if extra else ''}"
        f"Received: filepath={path!r}. The model was left unchanged. Build "
        "the model with the architecture the file was saved from, or pass "
        "skip_mismatch=True to load only the layers that match."
    )


def assign_all(model: keras.Model, assignments) -> None:
    """Assigns (variable, value) pairs; on any failure restores every one."""
    saved = snapshot(model)
    try:
        for variable, value in assignments:
            variable.assign(np.asarray(value).astype(variable.dtype))
    except Exception:
        restore(saved)
        raise


def _shapes(shapes) -> str:
    return "[" + ", ".join(str(tuple(shape)) for shape in shapes) + "]"


def snapshot(model: keras.Model):
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    return [(variable, np.array(variable.numpy(), copy=True)) for variable in variables]


def restore(snapshot) -> None:
    for variable, value in snapshot:
        variable.assign(value)
