# SPDX-License-Identifier: Apache-2.0
"""The train, test and predict steps a replica runs on its prepared slice.

They follow Keras's own TensorFlow steps (`keras/src/backend/tensorflow/
trainer.py`, Keras 3.15) and differ in these ways:

* Rows a replica holds only as a copy (see `batches.py`) are left out of
  metrics and predictions, so every row of a batch counts once.
* Each replica's gradient is weighted by its share of the global batch, so a
  batch that does not split evenly (10 rows on 4 replicas: 3/3/3/1) updates
  the weights as one device would. Keras averages the replicas' per-row
  means, which weighs rows unequally. The loss *value* is left as Keras
  computes it.
* With `global_loss`, the replicas' targets, outputs and sample weights are
  gathered and the loss and metrics are computed once over the global batch,
  as Keras 2's `multi_gpu_model` did after concatenating the towers' outputs.
  A loss that depends on the batch as a whole (a Cox partial likelihood, a
  batch-hard triplet loss) then gives one device's value. Gradients reach
  each replica through the gather (`ReplicaContext.all_gather` sums them
  across replicas and hands each its slice).
* Where replicas report unequal parts of the batch (either of the two
  above), and always under `CentralStorageStrategy`, the loss tracker and
  metrics are updated once per batch in cross-replica context, on the
  batch's rows in order: every per-batch log is one device's.
* The optimizer clips the summed gradient, not each replica's share, and
  random ops draw per replica (`_internals.optimizers.clip_after_all_reduce`,
  `use_replica_seed_generator`).
* Under loss scaling (`mixed_float16`) a step is skipped when the summed
  gradient is not finite, whichever replica overflowed
  (`_non_finite_together`).
* A loss or metric over gathered, masked or concatenated outputs reads a
  sigmoid or softmax output's logits as one device does
  (`_internals.map_keeping_logits`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import keras
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import loss_tracking, seed_generators
from parallel_keras._internals import optimizers as optimizer_internals
from parallel_keras.compat import losses as compat_losses
from parallel_keras.data_parallel import accumulation, batches, central_storage


@dataclasses.dataclass(frozen=True, eq=False)
class StepContext:
    """What one replica's step knows of its batch and how it reports it.

    Built once at the top of a step (`_step_context`) and handed to each part
    of it, instead of each part re-deriving it from the data.
    """

    x: Any
    y: Any
    sample_weight: Any
    keep: tf.Tensor | None
    """Rows this replica reports (`batches.PreparedBatch.keep`); None: all."""
    batch_rows: tf.Tensor | None
    """`[rows split across replicas, rows of the batch]`; None: unknown."""
    split: batches.Split
    """How `batches.prepare_dataset` left the batch."""
    training: bool
    global_loss: bool
    """Loss and metrics over the gathered global batch (`batch_loss="global"`)."""
    merged: bool
    """The merge policy: loss tracker and metrics updated once per batch in
    cross-replica context (`_merged_metrics`), not on each replica."""


def _step_context(model, data, training: bool, global_loss: bool) -> StepContext:
    step = batches.unpack(data)
    return StepContext(
        x=step.x,
        y=step.y,
        sample_weight=step.sample_weight,
        keep=step.keep,
        batch_rows=step.batch_rows,
        split=step.split,
        training=training,
        global_loss=global_loss,
        merged=_merges_metrics(model, step.keep, global_loss),
    )


def train_step(model, data, global_loss: bool = False, trainable_weights=None):
    """One optimizer step on this replica's slice; returns the metric logs.

    `trainable_weights`: the weights to train (the parallel model's, fixed
    at compile as in Keras 2); defaults to the model's trainable weights now.
    """
    step = _step_context(model, data, training=True, global_loss=global_loss)
    # interception: Keras's global SeedGenerator, per replica thread, at each trace.
    seed_generators.use_replica_seed_generator()
    central = _central_output_losses(model)
    with tf.GradientTape() as tape:
        y_pred = model(step.x, training=True)
        gathered = _gathered_if(step, y_pred)
        loss, tracked = _loss(model, step, y_pred, gathered)
        if model.optimizer is not None:
            loss = model.optimizer.scale_loss(loss)
    if trainable_weights is None:
        trainable_weights = model.trainable_weights
    if trainable_weights:
        gradients = tape.gradient(loss, trainable_weights)
        if accumulation.accumulation_steps(model.optimizer) is None:
            # Accumulation checks the summed gradient itself.
            gradients = _non_finite_together(model.optimizer, gradients)
        accumulation.apply_gradients(model, gradients, trainable_weights)
    else:
        warnings.warn("The model does not have any trainable weights.", stacklevel=2)
    if step.merged:
        return _merged_metrics(model, step, y_pred, gathered, tracked, central)
    return _local_metrics(model, step, y_pred, gathered)


def set_up_optimizer(optimizer) -> None:
    """Makes `optimizer` clip as `train_step` needs: the summed gradient.

    Called where the optimizer is adopted, before any step is traced: at the
    parallel model's `compile`, and at the start of each `fit` and
    `train_on_batch` of the parallel model and of a template using these
    steps (a `clipnorm` set after compile counts). Accumulation clips the
    summed gradient itself (`accumulation.py`).
    """
    if (
        optimizer is not None
        and accumulation.accumulation_steps(optimizer) is None
        and optimizer_internals.clips_gradients(optimizer)
    ):
        # interception: the optimizer's clip moved after its all-reduce, at
        # compile and at each fit/train_on_batch (once per optimizer).
        optimizer_internals.clip_after_all_reduce(optimizer)


def _non_finite_together(optimizer, gradients):
    """Under loss scaling, every replica's gradients non-finite if any are.

    `LossScaleOptimizer` decides on the first replica's own gradients
    whether to apply the step or skip it and halve the scale. One device
    decides on the batch's gradient, the replicas' sum: non-finite when any
    replica's share is. A step that another replica overflowed would be
    applied with an infinite sum (NaN weights after `clipnorm`, a
    `clipvalue`-clipped wrong step). A NaN added to every replica's
    gradients then (0 otherwise, which changes no value) makes each
    replica's check the sum's, and every replica take the same branch.
    """
    context = tf.distribute.get_replica_context()
    if (
        not isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        or context is None
        or context.num_replicas_in_sync == 1
    ):
        return gradients
    present = [g for g in gradients if g is not None]
    if not present:
        return gradients
    non_finite = tf.add_n(
        [tf.reduce_sum(tf.cast(~tf.math.is_finite(_values(g)), tf.float32)) for g in present]
    )
    non_finite = context.all_reduce(tf.distribute.ReduceOp.SUM, non_finite)
    poison = tf.where(non_finite > 0, float("nan"), 0.0)

    def poisoned(gradient):
        if gradient is None:
            return None
        if isinstance(gradient, tf.IndexedSlices):
            values = gradient.values + tf.cast(poison, gradient.values.dtype)
            return tf.IndexedSlices(values, gradient.indices, gradient.dense_shape)
        return gradient + tf.cast(poison, gradient.dtype)

    return [poisoned(gradient) for gradient in gradients]


def _values(gradient):
    return gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient


def test_step(model, data, global_loss: bool = False):
    """Loss and metrics on this replica's slice; returns the metric logs."""
    step = _step_context(model, data, training=False, global_loss=global_loss)
    seed_generators.use_replica_seed_generator()
    central = _central_output_losses(model)
    y_pred = model(step.x, training=False)
    gathered = _gathered_if(step, y_pred)
    _, tracked = _loss(model, step, y_pred, gathered)
    if step.merged:
        return _merged_metrics(model, step, y_pred, gathered, tracked, central)
    return _local_metrics(model, step, y_pred, gathered)


def predict_step(model, data):
    """The model's outputs for the rows this replica reports."""
    step = batches.unpack(data)
    x, keep = step.x, step.keep
    seed_generators.use_replica_seed_generator()
    y_pred = model(x, training=False)
    if keep is None:
        return y_pred
    return tf.nest.map_structure(lambda value: _kept(value, keep), y_pred)


def _loss(model, step: StepContext, y_pred, gathered):
    """The loss to differentiate, and `(value, rows)` for the loss tracker,
    which is updated here unless the metrics are `step.merged`."""
    context = tf.distribute.get_replica_context()
    num_replicas = context.num_replicas_in_sync
    x, keep, batch_rows, merged = step.x, step.keep, step.batch_rows, step.merged
    local_rows = _rows(x)
    if gathered is not None:
        targets, outputs, weights = gathered
        if compat_losses.reads_inputs_in_loss(model):
            # A Keras 2 loss reading the model's inputs reads the rows of the
            # outputs it is given: the global batch's.
            x = tf.nest.map_structure(lambda value: _gathered(value, keep), x)
        loss = model.compute_loss(
            x=x, y=targets, y_pred=outputs, sample_weight=weights, training=step.training
        )
        loss = loss_tracking.loss_scaled_for_replicas(loss, num_replicas)
        on_first_replica = tf.equal(context.replica_id_in_sync_group, 0)
        reported = tf.cast(_rows(outputs), loss.dtype) * tf.cast(on_first_replica, loss.dtype)
        tracked = (loss * num_replicas, reported)
        if not merged:
            _update_loss_tracker(model, *tracked)
        return loss, tracked
    # Every replica holds 1/N of the batch when `batches.prepare_dataset`
    # left it to split into equal static slices: Keras's own averaging, of
    # the loss and of per-output losses, is then one device's.
    equal_slices = step.split is batches.Split.EQUAL
    # Under CentralStorageStrategy the merge recounts them instead.
    trackers = (
        []
        if equal_slices or central_storage.sums_replica_assigns(model.distribute_strategy)
        else loss_tracking.output_loss_trackers(model)
    )
    before = [_read(tracker.total, tracker.count) for tracker in trackers]
    loss = model.compute_loss(
        x=x, y=step.y, y_pred=y_pred, sample_weight=step.sample_weight, training=step.training
    )
    loss = loss_tracking.loss_scaled_for_replicas(loss, num_replicas)
    reported = tf.cast(local_rows if keep is None else tf.reduce_sum(keep), loss.dtype)
    tracked = (loss * num_replicas, reported)
    if not merged:
        _update_loss_tracker(model, *tracked)
    if num_replicas == 1 or equal_slices:
        return loss, tracked
    local = tf.cast(local_rows, loss.dtype)
    if batch_rows is not None:
        split, batch = tf.unstack(tf.cast(batch_rows, loss.dtype))
    else:
        split = batch = context.all_reduce(tf.distribute.ReduceOp.SUM, local)
    _reweight_output_losses(trackers, before, reported / batch)
    share = tf.math.divide_no_nan(local * num_replicas, split)
    weighted = loss * share
    return weighted + tf.stop_gradient(loss - weighted), tracked


def _reweight_output_losses(trackers, before, share) -> None:
    """Gives each output-loss update this replica's share of one batch.

    Keras counts every replica's per-output loss once, whatever its rows
    (see `loss_tracking.output_loss_trackers`); one device counts the batch
    once. Weighting each replica's value by its share of the batch's rows
    gives the batch's value, counted once.
    """
    for tracker, (total, count) in zip(trackers, before):
        total_after, count_after = _read(tracker.total, tracker.count)
        value = tf.math.divide_no_nan(total_after - total, count_after - count)
        weight = tf.cast(share, tracker.count.dtype)
        tracker.total.assign(total + value * weight)
        tracker.count.assign(count + weight)


def _read(*variables):
    """The variables' current values (a read now, not the variable)."""
    return tuple(tf.identity(variable.value) for variable in variables)


def _update_loss_tracker(model, value, rows) -> None:
    tracker = loss_tracking.loss_tracker(model)
    if tracker is not None:
        # Keras scales each replica's loss by 1 / replicas for the gradient
        # sum; the tracker records the unscaled value, weighted by rows.
        tracker.update_state(value, sample_weight=rows)


def _merges_metrics(model, keep, global_loss: bool) -> bool:
    """Whether the loss tracker and metrics are updated once per batch, in
    cross-replica context (`_merged_metrics`), rather than on each replica.

    Needed where replicas report unequal parts of the batch (a `keep` mask,
    or the global batch on the first replica only): each replica's own
    metrics would then hold different rows, and Keras's per-batch logs (the
    mean of the replicas' results) would be wrong, e.g. divided by the
    replica count. And under `CentralStorageStrategy` always: its metric
    variables are not per replica (see `central_storage.sums_replica_assigns`).
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return False
    if isinstance(model.distribute_strategy, tf.distribute.MultiWorkerMirroredStrategy):
        # A merge sees only this worker's replicas: see `_local_metrics`.
        return False
    return (
        keep is not None
        or global_loss
        or central_storage.sums_replica_assigns(model.distribute_strategy)
    )


def _central_output_losses(model):
    """Under `CentralStorageStrategy`, the per-output loss trackers and their
    values before this step's update (read on every replica alike)."""
    context = tf.distribute.get_replica_context()
    if (
        context is None
        or context.num_replicas_in_sync == 1
        or not central_storage.sums_replica_assigns(model.distribute_strategy)
    ):
        return None
    trackers = loss_tracking.output_loss_trackers(model)
    return [(tracker, _read(tracker.total, tracker.count)) for tracker in trackers]


def _merged_metrics(model, step: StepContext, y_pred, gathered, tracked, central):
    """Updates the loss tracker and metrics once, on the batch's reported rows.

    Runs in cross-replica context (`merge_call`, at the step's top level:
    never inside a `tf.cond`, where `CentralStorageStrategy`'s variables
    cannot synchronize). Every replica then returns the batch's logs, so
    Keras's mean over replicas is one device's per-batch log.
    """
    if gathered is not None:
        reported = gathered
    elif step.keep is not None:
        reported = tf.nest.map_structure(
            lambda value: _kept(value, step.keep), (step.y, y_pred, step.sample_weight)
        )
    else:
        reported = (step.y, y_pred, step.sample_weight)

    def merge(strategy, reported, tracked):
        local = strategy.experimental_local_results
        if gathered is not None:
            # Every replica holds the global batch: the first one's is it.
            targets, outputs, weights = tf.nest.map_structure(
                lambda value: local(value)[0], reported
            )
            if central:
                # Every replica added the same values: N - 1 times too many.
                central_storage.correct_summed_assigns(central, strategy.num_replicas_in_sync)
        else:
            targets, outputs, weights = tf.nest.map_structure(
                lambda value: _concatenated(local(value)), reported
            )
            if central:
                loss_tracking.recount_output_losses(model, central, targets, outputs, weights)
        values, rows = (tf.stack(local(part)) for part in tracked)
        _update_loss_tracker(model, values, rows)
        return model.compute_metrics(None, targets, outputs, sample_weight=weights)

    context = tf.distribute.get_replica_context()
    return context.merge_call(merge, args=(reported, tracked))


def _local_metrics(model, step: StepContext, y_pred, gathered):
    """Each replica updates its own (ON_READ) metrics with the rows it reports.

    Under MultiWorkerMirroredStrategy, where a `merge_call` would see only
    this worker's replicas. Keras's per-batch logs are then the mean of the
    replicas' own results (the epoch logs are the batch's).
    """
    x, y, sample_weight, keep = step.x, step.y, step.sample_weight, step.keep
    if gathered is not None:
        # Every replica holds the whole batch: the first one reports it.
        y, y_pred, sample_weight = gathered
        context = tf.distribute.get_replica_context()
        reports = context.replica_id_in_sync_group == 0
    elif keep is not None:
        y, y_pred, sample_weight = tf.nest.map_structure(
            lambda value: _kept(value, keep), (y, y_pred, sample_weight)
        )
        reports = tf.reduce_sum(keep) > 0
    else:
        return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    # A replica with no rows of its own skips the update: a custom metric
    # that returns the mean of an empty batch would record NaN.
    def update():
        model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
        return tf.constant(True)

    tf.cond(reports, update, lambda: tf.constant(False))
    return model.get_metrics_result()


def _concatenated(values):
    """One replica's values per replica, as one tensor in replica order."""
    if values[0] is None:
        return None
    if not values[0].shape.rank:
        return values[0]
    return _internals.concat_keeping_logits(values, axis=0)


def _gathered_if(step: StepContext, y_pred):
    """With `step.global_loss`, every replica's reported targets, outputs
    and sample weights, in global batch order (gathered once per step, for
    loss and metrics)."""
    context = tf.distribute.get_replica_context()
    if not step.global_loss or context.num_replicas_in_sync == 1:
        return None
    structure = (step.y, y_pred, step.sample_weight)
    return tf.nest.map_structure(lambda value: _gathered(value, step.keep), structure)


def _gathered(value, keep):
    """Every replica's reported rows of `value`, in global batch order."""
    if value is None:
        return None
    if keep is not None:
        value = _kept(value, keep)
    context = tf.distribute.get_replica_context()
    # A sigmoid or softmax output's logits come along, so Keras's
    # crossentropies compute from them as on one device.
    return _internals.map_keeping_logits(lambda part: context.all_gather(part, axis=0), value)


def _kept(value, keep):
    if value is None or not value.shape.rank:
        return value
    return _internals.map_keeping_logits(lambda part: tf.boolean_mask(part, keep > 0), value)


def _rows(structure):
    for value in tf.nest.flatten(structure):
        if value is not None and value.shape.rank:
            return tf.shape(value)[0]
    return tf.constant(0)
