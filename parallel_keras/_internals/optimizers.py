"""Keras's optimizer: gradient accumulation, run on each replica.

Upstream surface: Keras 3 `BaseOptimizer` (optimizers/base_optimizer.py:
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

Checked on TensorFlow 2.21.0 with Keras 3.15.1; `tests/internals/
test_optimizers.py` fails when an upgrade changes what this relies on, or
when Keras's own accumulation starts working under a strategy (so this can
go).
"""

from __future__ import annotations

import keras


def _base():
    from keras.src.optimizers import base_optimizer  # pylint: disable=g-direct-keras-import

    return base_optimizer.BaseOptimizer


def micro_step_counter(optimizer: keras.optimizers.Optimizer) -> keras.Variable:
    """`_iterations`: batches applied, which `iterations` divides by the steps.

    On one device Keras increments it for every batch and reports
    `iterations = _iterations // gradient_accumulation_steps`, the updates.
    """
    return optimizer._iterations


def gradient_accumulators(optimizer: keras.optimizers.Optimizer, variables) -> list:
    """The optimizer's accumulator of each variable (`build` made them)."""
    accumulators = getattr(optimizer, "_accumulated_gradients", None)
    if accumulators is None:
        return None
    return [accumulators[optimizer._get_variable_index(v)] for v in variables]


def filter_empty_gradients(optimizer: keras.optimizers.Optimizer, grads, variables):
    """Keras's own filter: warns about and drops variables without gradients."""
    return optimizer._filter_empty_gradients(grads, variables)


def clip_gradients(optimizer: keras.optimizers.Optimizer, grads) -> list:
    """`clipnorm`/`clipvalue`/`global_clipnorm` as Keras applies them."""
    return optimizer._clip_gradients(grads)


def apply_weight_decay_here(optimizer: keras.optimizers.Optimizer, variables) -> None:
    """Weight decay by plain assignments (this replica's copies).

    `BaseOptimizer._apply_weight_decay`; `TFOptimizer`'s override goes
    through `maybe_merge_call`, which cannot run inside a condition.
    """
    _base()._apply_weight_decay(optimizer, variables)


def update_moving_average_here(optimizer: keras.optimizers.Optimizer) -> None:
    """EMA of the model variables (`use_ema`), by plain assignments."""
    _base()._update_model_variables_moving_average(
        optimizer, optimizer._trainable_variables
    )


def overwrite_with_moving_average_here(optimizer: keras.optimizers.Optimizer) -> None:
    """`ema_overwrite_frequency`: `BaseOptimizer`'s plain assignments (the
    TF override calls `extended.update`, a merge call in replica context)."""
    _base()._overwrite_model_variables_with_average_value(
        optimizer, optimizer._trainable_variables
    )


def overwrites_with_gradient(optimizer: keras.optimizers.Optimizer, variable) -> bool:
    """Whether Keras assigns `variable` its gradient instead of updating it."""
    return optimizer._overwrite_variable_with_gradient(variable)
