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
