# SPDX-License-Identifier: Apache-2.0
"""Keras's loss trackers, metric order and the loss under a strategy.

Upstream surface: Keras 3 `Trainer` (trainers/trainer.py: `_loss_tracker`,
`_flatten_metrics_in_order`, `compute_loss`), `CompileLoss`
(trainers/compile_utils.py, held in `_compile_loss`) and
`scale_loss_for_distribution` (losses/loss.py; keras-team/keras#19891, fixed
by keras-team/keras#20609). Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3
and 3.15.1 sources; where the loss under a strategy differs (3.5-3.7 against
3.8+) each form lists its versions and one is chosen once, at first use.
Canaries: `tests/internals/test_loss_tracking.py`.
"""

from __future__ import annotations

import functools
from typing import Any

import keras
import tensorflow as tf

# --- Keras's loss tracker ---------------------------------------------------
#
# Keras 3.15's `Trainer` records the loss metric in the private
# `_loss_tracker` (a `Mean` created by `compile`); the TF `train_step` and
# `test_step` update it. parallel_keras's steps do the same.


def loss_tracker(model: keras.Model) -> keras.metrics.Mean | None:
    return getattr(model, "_loss_tracker", None)


# `CompileLoss.call` (trainers/compile_utils.py, Keras 3.15) records each
# output's unweighted loss in a `Mean` of `CompileLoss.metrics` (held by the
# model's private `_compile_loss`), weighted by the output's *static* batch
# size: unknown (weight 1) under tf.distribute, so replicas of 3 rows and
# of 1 row count alike. parallel_keras re-weights each replica's update.


def output_loss_trackers(model: keras.Model) -> list[keras.metrics.Metric]:
    compile_loss = getattr(model, "_compile_loss", None)
    if compile_loss is None:
        return []
    return [metric for metric in getattr(compile_loss, "metrics", []) if metric is not None]


# `Trainer._flatten_metrics_in_order` (Keras 3.15) orders `*_on_batch`
# results as `metrics_names`; `TensorFlowTrainer.train_step` & co. are the
# steps a model uses unless its class overrides them.


def flatten_metrics_in_order(model: keras.Model, logs: dict) -> Any:
    """`logs` as Keras's `*_on_batch` return them (a list, or one value)."""
    return model._flatten_metrics_in_order(logs)


# --- The loss under a strategy: scaled per replica or not ----------------
#
# Under tf.distribute the replicas' gradients are summed, so each replica's
# loss must be 1/replicas of its mean for the sum to be one device's
# gradient. Two upstream shapes, chosen once:
# 1. Keras 3.8+ (checked 3.8.0, 3.10.0, 3.11.3, 3.15.1): `compute_loss`
#    scales it itself (`losses/loss.py` `scale_loss_for_distribution`, in
#    `reduce_values` and `_aggregate_additional_loss`; keras-team/keras#19891,
#    fixed by keras-team/keras#20609), and unscales what the trackers record.
# 2. Keras 3.5-3.7 (checked 3.5.0): `compute_loss` returns the replica's
#    plain mean, so gradients come out `replicas` times one device's (native
#    MirroredStrategy `fit` too); parallel_keras's steps scale it.


@functools.cache
def _compute_loss_scales_for_distribution() -> bool:
    from keras.src.losses import loss as loss_module

    return callable(getattr(loss_module, "scale_loss_for_distribution", None))


def loss_scaled_for_replicas(loss: tf.Tensor, num_replicas: int) -> tf.Tensor:
    """`model.compute_loss`'s value as Keras 3.8+ returns it under a strategy.

    That is, 1/`num_replicas` of the replica's loss, on every Keras shape.
    """
    if num_replicas == 1 or _compute_loss_scales_for_distribution():
        return loss
    return loss * tf.cast(1.0 / num_replicas, loss.dtype)


def recount_output_losses(model: keras.Model, before, y, y_pred, sample_weight) -> None:
    """The per-output loss trackers as one update on the whole batch.

    `before` as in `correct_summed_assigns`; called in cross-replica context
    with the batch's targets, outputs and sample weights. For replicas whose
    per-output losses differ (unequal slices), where the sum of their
    assigns cannot be split back into each replica's share.
    """
    for metric, (total, count) in before:
        metric.total.assign(total)
        metric.count.assign(count)
    model._compile_loss(y, y_pred, sample_weight)
