"""Keras optimizers whose variables were relocated after they were built.

Upstream surface: `BaseOptimizer._trainable_variables` and
`_trainable_variables_indices` (optimizers/base_optimizer.py), keyed by
`_var_key` -- on the TF backend the `_unique_id` of the tf.Variable behind
each Keras variable (backend/tensorflow/optimizer.py). Relocating a model's
variables into a strategy (`variables.relocate_variables`) gives each Keras
variable a new tf.Variable, so an optimizer built before (a template trained,
or resumed from a checkpoint, before `multi_gpu_model`) no longer finds them:
"Unknown variable ... This optimizer can only be called for the variables it
was originally built with". The Keras variables are the same objects, in the
same order, so the optimizer's slots (Adam moments) and `iterations` still
belong to them: re-keying the index keeps that state.

Checked on TensorFlow 2.21.0 with Keras 3.15.1; `tests/internals/
test_optimizers.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

import keras


def rekey_optimizer_variables(optimizer: keras.optimizers.Optimizer) -> None:
    """Points a built optimizer's variable index at its variables' current values."""
    for current in (optimizer, getattr(optimizer, "inner_optimizer", None)):
        if current is None or not getattr(current, "built", False):
            continue
        variables = current._trainable_variables
        current._trainable_variables_indices = {
            current._var_key(variable): index for index, variable in enumerate(variables)
        }


def optimizer_variable_keys(optimizer: keras.optimizers.Optimizer) -> dict:
    """The optimizer's index from variable key to slot position (for canaries)."""
    return dict(optimizer._trainable_variables_indices)


def optimizer_built_variables(optimizer: keras.optimizers.Optimizer) -> list:
    """The variables the optimizer was built for, in slot order (a
    `LossScaleOptimizer`'s are its inner optimizer's)."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:
        return list(inner._trainable_variables) if inner.built else []
    return list(optimizer._trainable_variables)
