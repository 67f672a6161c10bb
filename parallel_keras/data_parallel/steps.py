"""The train, test and predict steps a replica runs on its prepared slice.

They follow Keras's own TensorFlow steps (`keras/src/backend/tensorflow/
trainer.py`, Keras 3.15) and differ in three ways:

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
"""

from __future__ import annotations

import warnings

import tensorflow as tf

from parallel_keras import _internals
from parallel_keras.data_parallel import batches


def train_step(model, data, global_loss: bool = False):
    """One optimizer step on this replica's slice; returns the metric logs."""
    x, y, sample_weight, keep, batch_rows = batches.unpack(data)
    with tf.GradientTape() as tape:
        y_pred = model(x, training=True)
        gathered = _gathered_if(global_loss, (y, y_pred, sample_weight), keep)
        loss = _loss(model, x, y, y_pred, sample_weight, keep, batch_rows, gathered, True)
        if model.optimizer is not None:
            loss = model.optimizer.scale_loss(loss)
    trainable_weights = model.trainable_weights
    if trainable_weights:
        gradients = tape.gradient(loss, trainable_weights)
        model.optimizer.apply_gradients(zip(gradients, trainable_weights))
    else:
        warnings.warn("The model does not have any trainable weights.")
    return _metrics(model, x, y, y_pred, sample_weight, keep, gathered)


def test_step(model, data, global_loss: bool = False):
    """Loss and metrics on this replica's slice; returns the metric logs."""
    x, y, sample_weight, keep, batch_rows = batches.unpack(data)
    y_pred = model(x, training=False)
    gathered = _gathered_if(global_loss, (y, y_pred, sample_weight), keep)
    _loss(model, x, y, y_pred, sample_weight, keep, batch_rows, gathered, False)
    return _metrics(model, x, y, y_pred, sample_weight, keep, gathered)


def predict_step(model, data):
    """The model's outputs for the rows this replica reports."""
    x, _, _, keep, _ = batches.unpack(data)
    y_pred = model(x, training=False)
    if keep is None:
        return y_pred
    return tf.nest.map_structure(lambda value: _kept(value, keep), y_pred)


def _loss(model, x, y, y_pred, sample_weight, keep, batch_rows, gathered, training):
    """The loss to differentiate; updates the model's loss tracker."""
    context = tf.distribute.get_replica_context()
    num_replicas = context.num_replicas_in_sync
    local_rows = _rows(x)
    if gathered is not None:
        targets, outputs, weights = gathered
        loss = model.compute_loss(
            x=x, y=targets, y_pred=outputs, sample_weight=weights, training=training
        )
        loss = _internals.loss_scaled_for_replicas(loss, num_replicas)
        on_first_replica = tf.equal(context.replica_id_in_sync_group, 0)
        reported = tf.cast(_rows(outputs), loss.dtype) * tf.cast(
            on_first_replica, loss.dtype
        )
        _update_loss_tracker(model, loss, num_replicas, reported)
        return loss
    # Every replica holds 1/N of the batch when the batch was left
    # unprepared because it splits into equal static slices
    # (`batches.prepare_dataset`): Keras's own averaging, of the loss and of
    # per-output losses, is then one device's.
    equal_slices = batch_rows is None and _static_rows(x) is not None
    trackers = [] if equal_slices else _internals.output_loss_trackers(model)
    before = [_read(tracker.total, tracker.count) for tracker in trackers]
    loss = model.compute_loss(
        x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training
    )
    loss = _internals.loss_scaled_for_replicas(loss, num_replicas)
    reported = tf.cast(local_rows if keep is None else tf.reduce_sum(keep), loss.dtype)
    _update_loss_tracker(model, loss, num_replicas, reported)
    if num_replicas == 1 or equal_slices:
        return loss
    local = tf.cast(local_rows, loss.dtype)
    if batch_rows is not None:
        split, batch = tf.unstack(tf.cast(batch_rows, loss.dtype))
    else:
        split = batch = context.all_reduce(tf.distribute.ReduceOp.SUM, local)
    _reweight_output_losses(trackers, before, reported / batch)
    share = tf.math.divide_no_nan(local * num_replicas, split)
    weighted = loss * share
    return weighted + tf.stop_gradient(loss - weighted)


def _reweight_output_losses(trackers, before, share) -> None:
    """Gives each output-loss update this replica's share of one batch.

    Keras counts every replica's per-output loss once, whatever its rows
    (see `_internals.output_loss_trackers`); one device counts the batch
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


def _update_loss_tracker(model, loss, num_replicas, rows) -> None:
    tracker = _internals.loss_tracker(model)
    if tracker is not None:
        # Keras scales each replica's loss by 1 / replicas for the gradient
        # sum; the tracker records the unscaled value, weighted by rows.
        tracker.update_state(loss * num_replicas, sample_weight=rows)


def _metrics(model, x, y, y_pred, sample_weight, keep, gathered):
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

    # Metric variables are per-replica (ON_READ) in Keras, so updating them
    # on some replicas only needs no cross-replica synchronization. A replica
    # with no rows of its own skips the update: a custom metric that returns
    # the mean of an empty batch would record NaN.
    def update():
        model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
        return tf.constant(True)

    tf.cond(reports, update, lambda: tf.constant(False))
    return model.get_metrics_result()


def _gathered_if(global_loss: bool, structure, keep):
    """With `global_loss`, every replica's reported rows of `structure`, in
    global batch order (gathered once per step, for loss and metrics)."""
    context = tf.distribute.get_replica_context()
    if not global_loss or context.num_replicas_in_sync == 1:
        return None

    def gather(value):
        if value is None:
            return None
        if keep is not None:
            value = _kept(value, keep)
        return context.all_gather(value, axis=0)

    return tf.nest.map_structure(gather, structure)


def _kept(value, keep):
    if value is None or not value.shape.rank:
        return value
    return tf.boolean_mask(value, keep > 0)


def _static_rows(structure) -> int | None:
    for value in tf.nest.flatten(structure):
        if value is not None and value.shape.rank:
            return value.shape[0]
    return None


def _rows(structure):
    for value in tf.nest.flatten(structure):
        if value is not None and value.shape.rank:
            return tf.shape(value)[0]
    return tf.constant(0)
