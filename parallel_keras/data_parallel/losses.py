# SPDX-License-Identifier: Apache-2.0
"""What `ParallelModel.compile` checks and decides about losses and metrics.

* Dicts keyed by output name must name real outputs (Keras's own message
  does not list them when the model is not functional).
* A loss dict on a model whose outputs are a list is passed to Keras as a
  list in output order (outputs it leaves out: no loss), as Keras 2 read it.
* Under `mixed_float16`, the optimizer must be able to get loss scaling.
* `batch_loss="auto"`: a loss or metric that is not one of Keras's own may
  depend on the batch as a whole, so it is computed over the global batch
  (Keras 2's semantics); Keras's built-in losses are per-row means and its
  metrics accumulate per-row statistics, so replicas can compute them on
  their slices.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

import keras

BATCH_LOSS_MODES = ("auto", "global", "replica")


def check_output_keys(model: keras.Model, value, argument: str) -> None:
    """Raises if `value` is a dict naming outputs `model` does not have."""
    names = getattr(model, "output_names", None)
    if not isinstance(value, Mapping) or not names:
        return
    unknown = sorted(str(key) for key in value if key not in names)
    if unknown:
        raise ValueError(
            f"`{argument}` given as a dict must be keyed by output name. The "
            f"parallel model's outputs are {list(names)}. Received: "
            f"{argument} with keys {sorted(map(str, value))}, of which "
            f"{unknown} name no output. Key it by those names (repeated "
            "template output names are numbered, as Keras 2 did), or pass a "
            "list in output order."
        )


def losses_in_output_order(model: keras.Model, loss, loss_weights):
    """`(loss, loss_weights)`, a loss dict on list outputs as lists by position.

    Keras 2 read a loss dict by output name, leaving the outputs it does not
    name without a loss (and a `loss_weights` dict likewise, weight 1 by
    default). Keras 3.7+'s `CompileLoss.build` reads a dict naming every
    output so; Keras 3.5-3.6 flatten it in sorted key order and pair that
    with the outputs in their own order, so `{'score': 'mse', 'label': None}`
    on outputs `[score, label]` gives "No loss to compute". A list in output
    order means the same on every Keras. Dict outputs, one output and
    subclassed templates keep Keras's own rules. (Run on Keras 3.5.0; the
    3.6.0 and 3.7.0 sources read.)
    """
    names = list(getattr(model, "output_names", None) or [])
    if not isinstance(loss, Mapping) or len(names) < 2 or not set(loss) <= set(names):
        return loss, loss_weights
    try:
        outputs = model.template.output
    except (AttributeError, ValueError):
        return loss, loss_weights
    if not isinstance(outputs, (list, tuple)) or len(outputs) != len(names):
        return loss, loss_weights
    ordered = [loss.get(name) for name in names]
    if isinstance(loss_weights, Mapping) and set(loss_weights) <= set(names):
        loss_weights = [loss_weights.get(name, 1.0) for name in names]
    return ordered, loss_weights


def check_loss_scaling(model: keras.Model, optimizer) -> None:
    """Raises if `mixed_float16` would need to wrap an already built optimizer."""
    if getattr(model.dtype_policy, "name", None) != "mixed_float16":
        return
    if not isinstance(optimizer, keras.optimizers.Optimizer) or isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        return
    if optimizer.built:
        raise ValueError(
            "A mixed_float16 model needs loss scaling, which compile adds by "
            "wrapping the optimizer in keras.optimizers.LossScaleOptimizer; "
            "an optimizer that already has state cannot be wrapped. Received: "
            f"optimizer={type(optimizer).__name__} already built with "
            f"{len(optimizer.variables)} variables and no loss scaling. Pass "
            "a new optimizer, or wrap it yourself before its first use: "
            "keras.optimizers.LossScaleOptimizer(optimizer)."
        )


def check_batch_loss(batch_loss: str) -> str:
    if batch_loss not in BATCH_LOSS_MODES:
        raise ValueError(
            "multi_gpu_model's `batch_loss` says over which rows the loss and "
            f"metrics are computed: one of {list(BATCH_LOSS_MODES)}. "
            f"Received: batch_loss={batch_loss!r}. Pass 'global' for a loss "
            "that depends on the whole batch (as Keras 2 computed it), "
            "'replica' for per-row losses, or 'auto'."
        )
    return batch_loss


def scaled_for_replicas(spec):
    """`spec` with each custom loss made to return at least one value per batch.

    Keras divides a replica's loss by the replica count (so the summed
    gradients are one batch's) in `losses.loss.reduce_values` -- except when
    the loss function returns a scalar, which it passes through unscaled
    (Keras 3.15). A Cox or triplet loss returning the batch's scalar would
    then train with N times the gradient. Returning the scalar as a
    one-element vector has the same value and gets Keras's scaling.
    """
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        return {key: scaled_for_replicas(value) for key, value in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(scaled_for_replicas(value) for value in spec)
    if _is_keras_builtin(spec):
        return spec
    if isinstance(spec, keras.losses.Loss):
        if spec.reduction != "sum_over_batch_size":
            return spec
        # Keras wraps a function in the same reduction; its own call
        # gives the per-row (or whole-batch) values.
        return _at_least_one_value(spec.call, spec.name)
    if callable(spec):
        return _at_least_one_value(spec, getattr(spec, "__name__", "loss"))
    return spec


def _at_least_one_value(function, name: str):
    def loss(y_true, y_pred):
        values = function(y_true, y_pred)
        if len(values.shape) == 0:
            return keras.ops.reshape(values, [1])
        return values

    loss.__name__ = name
    return loss


def all_keras_builtins(*specs) -> bool:
    """True if every loss and metric in `specs` is one of Keras's own."""
    return all(_is_keras_builtin(spec) for spec in specs)


def _is_keras_builtin(spec) -> bool:
    if spec is None or isinstance(spec, str):
        return True
    if isinstance(spec, Mapping):
        return all(_is_keras_builtin(value) for value in spec.values())
    if isinstance(spec, (list, tuple)):
        return all(_is_keras_builtin(value) for value in spec)
    wrapped = getattr(spec, "fn", None)
    if wrapped is not None and not _is_keras_builtin(wrapped):
        return False
    owner = spec if inspect.isfunction(spec) or inspect.isclass(spec) else type(spec)
    module = getattr(owner, "__module__", "") or ""
    return module == "keras" or module.startswith("keras.")


def unique_output_names(names: Sequence[str]) -> list[str]:
    """Output names made unique as Keras 2's `multi_gpu_model` did.

    Each name that occurs more than once is numbered from 1 in order:
    `['add', 'nested', 'nested']` becomes `['add', 'nested_1', 'nested_2']`.
    """
    repeated = {name for name in names if list(names).count(name) > 1}
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        if name in repeated:
            seen[name] = seen.get(name, 0) + 1
            name = f"{name}_{seen[name]}"
        unique.append(name)
    return unique
