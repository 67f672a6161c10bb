# SPDX-License-Identifier: Apache-2.0
"""Keras's optimizer: gradient accumulation on each replica, and optimizers
built before their variables were relocated.

Gradient accumulation. Upstream surface: Keras 3 `BaseOptimizer` (optimizers/base_optimizer.py:
`_iterations`, `_accumulated_gradients`, `_get_variable_index`,
`_clip_gradients`, `_apply_weight_decay`, `_filter_empty_gradients`,
`_update_model_variables_moving_average`) and `TFOptimizer`
(backend/tensorflow/optimizer.py), and `LossScaleOptimizer`'s
`step_counter` / `dynamic_scale` / `check_finite`.

Works around keras-team/keras#20582 (open): with `gradient_accumulation_steps`,
`BaseOptimizer._backend_apply_gradients` picks "update" or "accumulate" with
`ops.cond`, and both branches reach `TFOptimizer`'s updates through
`maybe_merge_call`. Under every tf.distribute strategy that uses merge calls
(all of them on CPU, and on GPU without XLA) that raises `merge_call called
while defining a new graph or a tf.function`. `data_parallel/accumulation.py`
runs the same steps in replica context with no merge call inside the
condition: the optimizer's own variables (aggregation NONE) are updated on
each replica's copy, from gradients every replica holds identically.

Relocation. Upstream surface: `BaseOptimizer._trainable_variables` and
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
test_optimizers.py` fails when an upgrade changes what this relies on, or
when Keras's own accumulation starts working under a strategy (so that part
can go).
"""

from __future__ import annotations

import keras


def _base():
    from keras.src.optimizers import base_optimizer

    return base_optimizer.BaseOptimizer


def micro_step_counter(optimizer: keras.optimizers.Optimizer) -> keras.Variable:
    """`_iterations`: batches applied, which `iterations` divides by the steps.

    On one device Keras increments it for every batch and reports
    `iterations = _iterations // gradient_accumulation_steps`, the updates.
    """
    return optimizer._iterations


def gradient_accumulators(optimizer: keras.optimizers.Optimizer, variables) -> list | None:
    """The optimizer's accumulator of each variable (`build` made them).

    None when the optimizer was built without accumulators.
    """
    accumulators = getattr(optimizer, "_accumulated_gradients", None)
    if accumulators is None:
        return None
    return [accumulators[optimizer._get_variable_index(v)] for v in variables]


def filter_empty_gradients(optimizer: keras.optimizers.Optimizer, grads, variables):
    """Keras's own filter: warns about and drops variables without gradients."""
    return optimizer._filter_empty_gradients(grads, variables)


def clip_gradients(optimizer: keras.optimizers.Optimizer, grads) -> list:
    """`clipnorm`/`clipvalue`/`global_clipnorm` as Keras applies them.

    Keras's own clip, also where `clip_after_all_reduce` moved it
    after the all-reduce for steps that do not accumulate.
    """
    return optimizer.__dict__.get("_parallel_keras_clip", optimizer._clip_gradients)(grads)


def apply_weight_decay_here(optimizer: keras.optimizers.Optimizer, variables) -> None:
    """Weight decay by plain assignments (this replica's copies).

    `BaseOptimizer._apply_weight_decay`; `TFOptimizer`'s override goes
    through `maybe_merge_call`, which cannot run inside a condition.
    """
    _base()._apply_weight_decay(optimizer, variables)


def update_moving_average_here(optimizer: keras.optimizers.Optimizer) -> None:
    """EMA of the model variables (`use_ema`), by plain assignments."""
    _base()._update_model_variables_moving_average(optimizer, optimizer._trainable_variables)


def overwrite_with_moving_average_here(optimizer: keras.optimizers.Optimizer) -> None:
    """`ema_overwrite_frequency`: `BaseOptimizer`'s plain assignments (the
    TF override calls `extended.update`, a merge call in replica context)."""
    _base()._overwrite_model_variables_with_average_value(optimizer, optimizer._trainable_variables)


def overwrites_with_gradient(optimizer: keras.optimizers.Optimizer, variable) -> bool:
    """Whether Keras assigns `variable` its gradient instead of updating it.

    Keras 3.8+ asks the optimizer (`_overwrite_variable_with_gradient`);
    3.5-3.7 read the variable's `overwrite_with_gradient` flag.
    """
    method = getattr(optimizer, "_overwrite_variable_with_gradient", None)
    if method is not None:
        return bool(method(variable))
    return bool(getattr(variable, "overwrite_with_gradient", False))


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


# --- Gradient clipping over the all-reduced gradient ------------------------
#
# Keras 3.15's `BaseOptimizer._backend_apply_gradients` clips with
# `_clip_gradients` and then calls `_backend_update_step`, whose TF version
# (`TFOptimizer`, backend/tensorflow/optimizer.py) sums the replicas'
# gradients in `_all_reduce_sum_gradients`: under tf.distribute each replica
# clips its share before the sum. One device, and Keras 2's merged towers,
# clipped the batch's gradient. Moving the clip after the sum (on this
# optimizer instance only) gives one device's update; outside a strategy the
# sum is the identity, so the order changes nothing there.


def clip_after_all_reduce(optimizer) -> None:
    """Makes `optimizer` clip the summed gradient, not each replica's share."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    if optimizer is None or "_parallel_keras_clip" in optimizer.__dict__:
        return
    clip = optimizer._clip_gradients
    all_reduce = optimizer._all_reduce_sum_gradients

    def all_reduce_then_clip(grads_and_vars):
        grads_and_vars = list(all_reduce(grads_and_vars))
        clipped = clip([gradient for gradient, _ in grads_and_vars])
        return [(gradient, variable) for gradient, (_, variable) in zip(clipped, grads_and_vars)]

    optimizer.__dict__["_parallel_keras_clip"] = clip
    optimizer.__dict__["_clip_gradients"] = lambda grads: grads
    optimizer.__dict__["_all_reduce_sum_gradients"] = all_reduce_then_clip


def clips_gradients(optimizer) -> bool:
    """Whether `optimizer` (or the one a LossScaleOptimizer wraps) clips."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    return any(
        getattr(optimizer, name, None) for name in ("clipnorm", "clipvalue", "global_clipnorm")
    )


def restore_clip(optimizer) -> None:
    """Undoes `clip_after_all_reduce` (Keras's own clip and all-reduce again)."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    if optimizer is None:
        return
    for name in ("_parallel_keras_clip", "_clip_gradients", "_all_reduce_sum_gradients"):
        optimizer.__dict__.pop(name, None)


# Keras 2's update formulas (compat.keras2_optimizer). Upstream surface:
# `BaseOptimizer._get_variable_index` (optimizers/base_optimizer.py) and the
# slot lists Keras 3's classes build in `build`: `RMSprop._velocities`,
# `Adagrad._accumulators`, `Nadam._momentums` / `_velocities`
# (optimizers/rmsprop.py, adagrad.py, nadam.py). A subclass's `update_step`
# gets one variable and must find its slots; Keras's own `update_step`s do
# it the same way. Checked on Keras 3.5.0 and 3.15.1 (the same names);
# `tests/internals/test_optimizers.py` fails when they change.


def optimizer_slot(optimizer: keras.optimizers.Optimizer, slots: str, variable) -> keras.Variable:
    """The slot of `variable` in the Keras optimizer's list `slots` (`"velocities"`)."""
    return getattr(optimizer, f"_{slots}")[optimizer._get_variable_index(variable)]


def variable_index(optimizer: keras.optimizers.Optimizer, variable) -> int:
    """The position of `variable` among the variables the optimizer was built for."""
    return optimizer._get_variable_index(variable)
