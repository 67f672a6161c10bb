# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `model.add_loss(<symbolic tensor>)` on a functional model.

The Keras 2 VAE idiom builds a loss from the model's own tensors and adds
it to the model:

    vae = Model(inputs, outputs)
    kl_loss = -0.5 * K.sum(1 + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
    vae.add_loss(K.mean(reconstruction_loss + kl_loss))
    vae.compile(optimizer='adam')

Keras 3 refuses a symbolic tensor in `Model.add_loss`. `add_loss` here
computes the same expression with a layer that the model calls on its
inputs at every step, so the loss is added to the total as in Keras 2 (also
in a `multi_gpu_model` built from it, which calls the model per replica).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import keras

_SUBCLASSES: dict[type, type] = {}


class SymbolicLoss(keras.layers.Layer):
    """Adds a loss computed from a model's inputs, each time it is called."""

    def __init__(self, loss_model: keras.Model, **kwargs: Any):
        super().__init__(**kwargs)
        self.loss_model = loss_model

    def call(self, inputs: Any, training: Any = None) -> Any:
        self.add_loss(self.loss_model(inputs, training=training))
        return inputs


def _with_symbolic_losses(base: Any) -> Any:
    """`base` whose `call` also calls the model's `SymbolicLoss` layers."""
    if base in _SUBCLASSES:
        return _SUBCLASSES[base]

    def call(self: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        outputs = base.call(self, inputs, *args, **kwargs)
        for layer in self.compat_symbolic_losses:
            layer(inputs, training=kwargs.get("training"))
        return outputs

    subclass = type(base.__name__, (base,), {"call": call, "__module__": base.__module__})
    subclass.__qualname__ = base.__qualname__
    _SUBCLASSES[base] = subclass
    return subclass


def add_loss(model: keras.Model, loss: Any) -> None:
    """Keras 2's `model.add_loss(loss)`, also for a loss built from the model's tensors.

    A loss computed from the functional model's inputs and layer outputs
    (a Keras tensor) is added to the total loss at every training and
    evaluation step, with the batch's values, as Keras 2 did; the model
    changes in place. Anything else goes to Keras 3's `model.add_loss`.
    Modernise: compute the loss in a layer that calls `self.add_loss(...)`
    in its `call`, or in a custom `train_step`.

    Args:
        model: A functional `keras.Model`.
        loss: A Keras tensor computed from `model.inputs`, or what Keras
            3's `add_loss` takes.

    Raises:
        ValueError: If the loss is not computed from the model's inputs.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> inputs = keras.Input((2,))
    >>> outputs = keras.layers.Dense(2)(inputs)
    >>> model = keras.Model(inputs, outputs)
    >>> compat.add_loss(model, keras.ops.mean(keras.ops.square(outputs - inputs)))
    >>> model.compile(optimizer="sgd")
    >>> history = model.fit(np.ones((4, 2)), epochs=1, verbose=0)
    """
    if not isinstance(loss, keras.KerasTensor):
        model.add_loss(loss)
        return
    try:
        # `model.input` keeps the structure `call` receives (a tensor or a list).
        loss_model = keras.Model(model.input, loss)
    except (ValueError, TypeError) as error:
        raise ValueError(
            "add_loss(model, loss) computes the loss from the model's inputs, so "
            "the loss must be built from them with Keras layers and keras.ops. "
            f"Received: a loss not computed from {model.name!r}'s inputs ({error}). "
            "Build it from the tensors of this model."
        ) from error
    if "compat_symbolic_losses" not in vars(model):
        model.__class__ = _with_symbolic_losses(type(model))
        model.compat_symbolic_losses = []
    model.compat_symbolic_losses.append(SymbolicLoss(loss_model))


# Model -> [(closure cells holding Keras tensors, a model computing their values)].
_CLOSURE_LOSSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reads_inputs_in_loss(model: Any) -> bool:
    """Whether `model`'s loss was given by `closure_loss` reading its inputs."""
    return bool(_CLOSURE_LOSSES.get(model))


def _keras_tensor_cells(function: Any, seen: set[int]) -> list:
    """The closure cells of `function` (and of the functions it closes over)
    that hold Keras tensors."""
    function = getattr(function, "__func__", function)  # a bound method
    if id(function) in seen:
        return []
    seen.add(id(function))
    found = []
    if isinstance(function, functools.partial):
        found.extend(_keras_tensor_cells(function.func, seen))
    for cell in getattr(function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # An empty cell (a name not yet assigned).
            continue
        if isinstance(value, keras.KerasTensor):
            found.append(cell)
        elif callable(value) and not isinstance(value, (keras.layers.Layer, type)):
            found.extend(_keras_tensor_cells(value, seen))
    return found


def closure_loss(model: keras.Model, loss: Any) -> Any:
    """Keras 2's loss function closing over a model's tensor (`loss_fn(mask_input)`).

    Keras 2 computed a loss in the model's graph, so a loss function built by
    a closure over one of the model's tensors read that tensor's value for
    the batch (the partial-convolution inpainting loss
    `y_comp = mask * y_true + (1 - mask) * y_pred` over the mask `Input`).
    Keras 3 calls the loss with the symbolic tensor itself, which fails.
    Here, at every training and evaluation step, each closed-over tensor
    holds its value for the batch while the loss runs (an input: the batch's
    own rows; a layer's output: computed from the batch's inputs), so the
    loss and the reported loss are Keras 2's, on one device and on a
    `multi_gpu_model` (its loss then reads the rows of the outputs it is
    given). The model's outputs, `predict` and saved files are unchanged.
    Any other loss is returned as it is. Modernise: pass the tensor to the
    loss as data (a `train_step` reading it from `x`, or a layer that calls
    `self.add_loss(...)` on it).

    Args:
        model: The model being compiled (a functional model, or a
            `multi_gpu_model` of one) whose tensors the loss closes over.
        loss: What the script passes as `loss=`: a function, a list or a
            dict of them.

    Returns:
        `loss` itself.

    Raises:
        ValueError: If a closed-over tensor is not computed from `model`'s
            inputs.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> image, mask = keras.Input((4,)), keras.Input((4,))
    >>> model = keras.Model([image, mask], keras.layers.Dense(4)(image))
    >>> def masked(mask):
    ...     def loss(y_true, y_pred):
    ...         return keras.ops.mean(keras.ops.abs(mask * (y_true - y_pred)), axis=-1)
    ...     return loss
    >>> model.compile(optimizer="sgd", loss=compat.closure_loss(model, masked(mask)))
    >>> history = model.fit([np.ones((4, 4)), np.ones((4, 4))], np.ones((4, 4)), verbose=0)
    """
    seen: set[int] = set()
    functions = loss.values() if isinstance(loss, dict) else loss
    functions = functions if isinstance(functions, (list, tuple)) else [functions]
    cells: list[Any] = []
    for function in functions:
        for cell in _keras_tensor_cells(function, seen):
            if all(cell is not known for known in cells):
                cells.append(cell)
    if not cells:
        return loss
    tensors = [cell.cell_contents for cell in cells]
    try:
        # `model.input` keeps the structure the batches' `x` has.
        reader = keras.Model(model.input, tensors)
    except (ValueError, TypeError) as error:
        names = ", ".join(repr(tensor.name) for tensor in tensors)
        raise ValueError(
            "A loss function that closes over a model's tensor reads its value for each "
            "batch, so the tensor must be one of the model's inputs or computed from them. "
            f"Received: tensors {names}, not computed from {model.name!r}'s inputs "
            f"({error}). Compile the model whose tensors the loss was built from."
        ) from error
    entries = _CLOSURE_LOSSES.setdefault(model, [])
    if not entries:
        compute_loss = model.compute_loss

        def compute_loss_with_batch_values(
            x=None, y=None, y_pred=None, sample_weight=None, training=True
        ):
            saved = []
            try:
                for entry_cells, entry_reader in _CLOSURE_LOSSES.get(model, ()):
                    values = entry_reader(x, training=training)
                    # One tensor comes back bare from Keras 3's functional call.
                    values = values if isinstance(values, (list, tuple)) else [values]
                    for cell, value in zip(entry_cells, values):
                        saved.append((cell, cell.cell_contents))
                        cell.cell_contents = value
                return compute_loss(x, y, y_pred, sample_weight, training=training)
            finally:
                for cell, value in reversed(saved):
                    cell.cell_contents = value

        # A plain instance attribute: Keras's attribute tracking has nothing to track.
        object.__setattr__(model, "compute_loss", compute_loss_with_batch_values)
    entries.append((cells, reader))
    return loss
