# SPDX-License-Identifier: Apache-2.0
"""One optimizer instance compiled into several models, as Keras 2 allowed.

Keras 2 scripts often compile one optimizer object into several models (a
GAN's discriminator and combined model; several discriminators). Keras 2's
optimizer made its slots (Adam's moments, momentum) for the weights each
model collected at compile, per model, and kept one `iterations` counter and
one learning rate for all of them: every model's training step advanced the
shared counter, which drives Adam's bias correction and the `decay=` time
decay (keras/optimizers.py, Keras 2.2.4 and 2.3.1). A Keras 3 optimizer is
built once, for the weights of the first model that trains, and refuses any
other ("Unknown variable ... recreate a new optimizer").

`shared_optimizer(optimizer, model)` records the weights `model` trains when
it is compiled; the optimizer is then built, when the first of its models
trains, for the weights of all of them. Each model's step updates its own
weights' slots and advances the one `iterations`, as in Keras 2, so the
numbers are Keras 2's.

Modernise: give each model its own optimizer
(`keras.optimizers.Adam(...)` per `compile`), knowing that each then counts
its own steps.
"""

from __future__ import annotations

import weakref
from typing import Any

import keras

from parallel_keras import _internals

# Optimizer -> the variables of every model compiled with it, in compile order.
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CLASSES: dict[type, type] = {}


class _BuiltForAllModels:
    """Builds the optimizer for the weights of every model it was compiled into."""

    def build(self, variables: Any) -> None:
        union: list = []
        seen: set[int] = set()
        for variable in [*_SHARED.get(self, ()), *variables]:
            if id(variable) not in seen:
                seen.add(id(variable))
                union.append(variable)
        super().build(union)  # type: ignore[misc]


def shared_optimizer(optimizer: Any, model: Any) -> Any:
    """Lets one optimizer train several models, with Keras 2's shared state.

    Args:
        optimizer: What the script passes to `model.compile(optimizer=...)`;
            anything but a `keras.optimizers.Optimizer` instance (a name such
            as `"adam"`) is returned as it is.
        model: The model being compiled; the weights it trains now are
            recorded (Keras 2 collected them at compile).

    Returns:
        `optimizer` itself (its class now also builds for the weights of every
        model it was compiled into; `isinstance` and its config hold).

    Raises:
        ValueError: The optimizer has already trained, without `model`'s
            weights: Keras 3 cannot add slots to a built optimizer.

    Example:
        `d.compile(optimizer=shared_optimizer(adam, d), loss="mse")`, then
        `combined.compile(optimizer=shared_optimizer(adam, combined), loss="mse")`.
    """
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        return optimizer
    variables = list(model.trainable_variables)
    if optimizer.built:
        built = {id(v) for v in _internals.optimizer_built_variables(optimizer)}
        missing = [v.path for v in variables if id(v) not in built]
        if missing:
            raise ValueError(
                "One optimizer can serve several models only if all of them are compiled "
                "before any trains (Keras 3 builds its state once). Received: "
                f"optimizer={type(optimizer).__name__} already trained, without the weights "
                f"{missing[:3]}{' ...' if len(missing) > 3 else ''} of {model.name!r}. Fix: "
                f"compile {model.name!r} before the first fit or train_on_batch, or give it its "
                f"own optimizer: keras.optimizers.{type(optimizer).__name__}.from_config("
                "optimizer.get_config())."
            )
        return optimizer
    _SHARED.setdefault(optimizer, []).extend(variables)
    cls = type(optimizer)
    if not issubclass(cls, _BuiltForAllModels):
        if cls not in _CLASSES:
            _CLASSES[cls] = type(
                cls.__name__, (_BuiltForAllModels, cls), {"__module__": cls.__module__}
            )
        optimizer.__class__ = _CLASSES[cls]
    return optimizer
