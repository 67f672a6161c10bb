# SPDX-License-Identifier: Apache-2.0
"""Gradient accumulation on the replicas: Keras's `gradient_accumulation_steps`.

An optimizer built with `gradient_accumulation_steps=k` (Keras 3's own
argument) averages the gradients of k batches and updates the weights once,
so batch B with k steps trains as one batch of k x B. Keras's implementation
fails under every tf.distribute strategy (keras-team/keras#20582: its
"update or accumulate" condition holds merge calls); here the replicas do
the same steps themselves:

1. The replicas' gradients are summed once per batch (an all-reduce outside
   any condition), so every replica holds the global batch's gradient, as
   one device would compute it.
2. In a condition with no cross-replica call inside, each replica adds it to
   its copy of the optimizer's own accumulators, or, every k-th batch,
   averages them, clips (`clipnorm`, `global_clipnorm`, `clipvalue`: the
   accumulated gradient, as on one device), applies weight decay and the
   optimizer's `update_step` to its copy of the weights, and resets the
   accumulators. Every replica applies the same values, so the copies stay
   equal, as `MirroredStrategy`'s own updates keep them.
3. The optimizer's step counter advances by one per batch (`iterations` is
   the number of updates), exactly as Keras counts on one device, so a saved
   optimizer means what it means there.

With mixed float16 the `LossScaleOptimizer` checks the summed gradient, and a
non-finite batch is skipped (not counted, not accumulated) while the scale
halves, as on one device.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import keras
import tensorflow as tf

from parallel_keras import _internals

_STEPS = "gradient_accumulation_steps"


def inner_optimizer(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    """The optimizer that updates the weights (inside a LossScaleOptimizer)."""
    return getattr(optimizer, "inner_optimizer", None) or optimizer


def accumulation_steps(optimizer: keras.optimizers.Optimizer | None) -> int | None:
    """The optimizer's `gradient_accumulation_steps`, or None when it has none.

    Raises:
        ValueError: If the value is not a positive integer.
    """
    if optimizer is None:
        return None
    inner = inner_optimizer(optimizer)
    steps = getattr(inner, _STEPS, None)
    if steps is None:
        return None
    if (
        isinstance(steps, bool)
        or not isinstance(steps, numbers.Real)
        or not float(steps).is_integer()
        or steps < 1
    ):
        raise ValueError(
            f"{_STEPS} is the number of batches whose gradients are averaged "
            "into one update, a positive integer. Received: "
            f"{type(inner).__name__}({_STEPS}={steps!r}). Pass e.g. "
            f"{_STEPS}=4, or None for an update every batch."
        )
    return int(float(steps))


def check_accumulation_optimizer(
    optimizer: keras.optimizers.Optimizer | str | None,
    strategy: tf.distribute.Strategy | None = None,
) -> None:
    """Raises now what accumulating with `optimizer` would raise in `fit`."""
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        return  # A name: Keras's defaults, no accumulation.
    steps = accumulation_steps(optimizer)
    if steps is not None and strategy is not None:
        _check_strategy(strategy, steps)
    inner = inner_optimizer(optimizer)
    if steps is not None and inner.built and (_internals.gradient_accumulators(inner, []) is None):
        raise ValueError(
            f"{_STEPS} must be set when the optimizer is created: Keras makes "
            "its gradient accumulators when the optimizer is built. Received: "
            f"{type(inner).__name__} built without accumulators, then given "
            f"{_STEPS}={steps}. Create the optimizer with "
            f"{type(inner).__name__}(..., {_STEPS}={steps})."
        )


def apply_gradients(model: keras.Model, gradients: Sequence, variables: Sequence) -> None:
    """The model's optimizer step for one batch, on this replica.

    Without accumulation this is `optimizer.apply_gradients`, unchanged.
    """
    optimizer = model.optimizer
    steps = accumulation_steps(optimizer)
    if steps is None:
        optimizer.apply_gradients(zip(gradients, variables))
        return
    check_accumulation_optimizer(optimizer)
    _apply_accumulating(optimizer, steps, list(gradients), list(variables))


def _apply_accumulating(optimizer, steps: int, gradients: list, variables: list) -> None:
    inner = inner_optimizer(optimizer)
    if not inner.built:
        raise RuntimeError(
            "Gradient accumulation needs the optimizer built before the first "
            f"step. Received: an unbuilt {type(inner).__name__}. Call "
            "model.optimizer.build(model.trainable_variables) under the "
            "model's strategy scope, or train with fit."
        )
    gradients, variables = _internals.filter_empty_gradients(inner, gradients, variables)
    _check_variables(inner, variables)
    _check_strategy(tf.distribute.get_strategy(), steps)
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        # Outside every condition: the one cross-replica call of the step.
        gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
    gradients = [tf.convert_to_tensor(g) for g in gradients]
    accumulators = _internals.gradient_accumulators(inner, variables)
    if accumulators is None:  # `check_accumulation_optimizer` raised for this already.
        raise RuntimeError(f"{type(inner).__name__} has no gradient accumulators.")
    counter = _internals.micro_step_counter(inner)

    def micro_step(grads):
        if inner.loss_scale_factor is not None:
            grads = [g / inner.loss_scale_factor for g in grads]
        is_update = tf.equal((counter + 1) % steps, 0)

        def update():
            averaged = [(g + a) / steps for g, a in zip(grads, accumulators)]
            averaged = _internals.clip_gradients(inner, averaged)
            _internals.apply_weight_decay_here(inner, variables)
            learning_rate = inner.learning_rate
            for gradient, variable in zip(averaged, variables):
                inner.update_step(gradient, variable, learning_rate)
            for accumulator in accumulators:
                accumulator.assign(tf.zeros(accumulator.shape, accumulator.dtype))
            return tf.constant(True)

        def accumulate():
            for gradient, accumulator in zip(grads, accumulators):
                accumulator.assign(accumulator + tf.cast(gradient, accumulator.dtype))
            return tf.constant(False)

        tf.cond(is_update, update, accumulate)
        for variable in variables:
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))
        if inner.use_ema:
            _internals.update_moving_average_here(inner)
            if inner.ema_overwrite_frequency:
                overwrite = tf.equal((inner.iterations + 1) % inner.ema_overwrite_frequency, 0)

                def overwrite_weights():
                    _internals.overwrite_with_moving_average_here(inner)
                    return tf.constant(True)

                tf.cond(overwrite, overwrite_weights, lambda: tf.constant(False))

    def step():
        if inner is optimizer:
            micro_step(gradients)
            return tf.constant(True)
        return _loss_scaled_step(optimizer, gradients, micro_step)

    counted = step()
    # A merge call (the counter keeps the first replica's value), outside
    # every condition.
    counter.assign_add(tf.cast(counted, counter.dtype))


def _loss_scaled_step(optimizer, gradients, micro_step):
    """`LossScaleOptimizer.apply` around `micro_step`: skips a non-finite batch."""
    finite = optimizer.check_finite(gradients)

    def finite_step():
        scale = optimizer.dynamic_scale
        micro_step([g / tf.cast(scale, g.dtype) for g in gradients])

        def grow():
            optimizer.step_counter.assign(0)
            optimizer.dynamic_scale.assign(optimizer.dynamic_scale * 2.0)
            return tf.constant(True)

        def count():
            optimizer.step_counter.assign_add(1)
            return tf.constant(False)

        tf.cond(
            tf.equal(optimizer.step_counter, optimizer.dynamic_growth_steps - 1),
            grow,
            count,
        )
        return tf.constant(True)

    def skip():
        optimizer.step_counter.assign(0)
        optimizer.dynamic_scale.assign(optimizer.dynamic_scale * 0.5)
        return tf.constant(False)

    return tf.cond(finite, finite_step, skip)


def _check_strategy(strategy, steps: int) -> None:
    if isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy):
        raise ValueError(
            "Gradient accumulation runs on replicas that each hold a copy of "
            "the weights; with cpu_relocation=True the weights live once, on "
            "/cpu:0, and TensorFlow updates them only through cross-replica "
            "calls that cannot run inside the accumulation's condition "
            "(keras-team/keras#20582). Received: cpu_relocation=True "
            f"(CentralStorageStrategy) with {_STEPS}={steps}. Drop "
            "cpu_relocation=True (the weights are the same), or drop "
            f"{_STEPS}."
        )


def _check_variables(inner, variables) -> None:
    """Variables the replicas cannot update on their own copies: say which."""
    for variable in variables:
        if _internals.overwrites_with_gradient(inner, variable):
            raise ValueError(
                _cannot(
                    variable,
                    "is overwritten with its gradient (`overwrite_with_gradient`, float8 training)",
                )
            )
        aggregation = _internals.replica_aggregation(variable)
        if aggregation != "none":
            raise ValueError(_cannot(variable, f"has aggregation={aggregation!r}"))


def _cannot(variable, what: str) -> str:
    return (
        f"Gradient accumulation updates each replica's copy of a weight from "
        f"the summed gradient, which needs weights created with "
        f"aggregation='none' (Keras's default). Received: weight "
        f"{variable.path!r}, which {what}. Create that weight with Keras's "
        f"defaults, or drop {_STEPS} from the optimizer."
    )


def keep_global_batch(
    global_batch: int, per_replica_batch: int, replicas: int | keras.Model
) -> tuple[int, int | None]:
    """The `fit` batch size and accumulation steps that keep `global_batch`.

    A script written for 8 GPUs with `batch_size=256` (32 rows per GPU) runs
    on 2 GPUs with 32 rows per GPU and 4 accumulation steps: the same update
    every 256 rows, in the memory each GPU had.

    Args:
        global_batch: Rows per weight update the script was written for.
        per_replica_batch: Rows each replica computes at a time.
        replicas: The replica count, or a parallel model (its strategy's).

    Returns:
        `(batch_size, gradient_accumulation_steps)`: pass the first to `fit`
        and the second to the optimizer (None when no accumulation is
        needed, since Keras takes only values >= 2).

    Raises:
        ValueError: If `global_batch` is not a multiple of
            `replicas * per_replica_batch`.

    Example:

    >>> keep_global_batch(256, per_replica_batch=32, replicas=2)
    (64, 4)
    """
    strategy = getattr(replicas, "distribute_strategy", None)
    count = strategy.num_replicas_in_sync if strategy is not None else replicas
    for name, value in (
        ("global_batch", global_batch),
        ("per_replica_batch", per_replica_batch),
        ("replicas", count),
    ):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(
                f"{name} must be a positive integer. Received: {name}={value!r}. "
                "Pass e.g. keep_global_batch(256, per_replica_batch=32, replicas=2)."
            )
    micro_batch = count * per_replica_batch
    if global_batch % micro_batch:
        fitting = [
            n for n in range(1, global_batch + 1) if global_batch % (n * per_replica_batch) == 0
        ]
        smaller = [
            rows for rows in range(per_replica_batch, 0, -1) if global_batch % (count * rows) == 0
        ]
        raise ValueError(
            "To keep the global batch, it must be a whole number of batches of "
            "replicas x per_replica_batch rows. Received: global_batch="
            f"{global_batch}, {count} replicas x per_replica_batch="
            f"{per_replica_batch} = {micro_batch} rows. Run on "
            f"{', '.join(map(str, fitting[:8]))} replica(s)"
            + (f", or pass per_replica_batch={smaller[0]}" if smaller else "")
            + "."
        )
    steps = global_batch // micro_batch
    return micro_batch, (steps if steps > 1 else None)
