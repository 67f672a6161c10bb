"""Keras's trainer: loss trackers, metric order, default steps, the strategy
captured at construction, the first-batch symbolic build, and resuming `fit`.

Upstream surface: Keras 3 `Trainer` / `TensorFlowTrainer`
(trainers/trainer.py, trainers/compile_utils.py,
backend/tensorflow/trainer.py) and `TFOptimizer` (`_distribution_strategy`).
Works around Keras's `_maybe_symbolic_build` reducing the first distributed
batch across replicas (keras-team/keras#20585, tensorflow/tensorflow#72388).

Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3 and 3.15.1 sources (one shape of each
touch on all of them); `tests/internals/test_trainer.py` fails when an upgrade changes what this relies on, or when
the symbolic-build defect is fixed upstream (so the workaround can go).
"""

from __future__ import annotations

from collections.abc import Callable
import functools
from typing import Any

import keras
import tensorflow as tf

from parallel_keras._internals import variables


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


def is_keras_default_step(model_class: type, name: str) -> bool:
    from keras.src.backend.tensorflow import trainer  # pylint: disable=g-direct-keras-import

    return getattr(model_class, name) is getattr(trainer.TensorFlowTrainer, name)


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
    from keras.src.losses import loss as loss_module  # pylint: disable=g-direct-keras-import

    return callable(getattr(loss_module, "scale_loss_for_distribution", None))


def loss_scaled_for_replicas(loss: tf.Tensor, num_replicas: int) -> tf.Tensor:
    """`model.compute_loss`'s value as Keras 3.8+ returns it under a strategy.

    That is, 1/`num_replicas` of the replica's loss, on every Keras shape.
    """
    if num_replicas == 1 or _compute_loss_scales_for_distribution():
        return loss
    return loss * tf.cast(1.0 / num_replicas, loss.dtype)


# --- Strategy captured at construction ------------------------------------
#
# Keras 3's `TensorFlowTrainer.__init__` stores `tf.distribute.get_strategy()`
# in `_distribute_strategy` when the model object is constructed, and
# `TFOptimizer.__init__` stores it in `_distribution_strategy`. A template
# built before `multi_gpu_model` (every legacy script) captured the default
# strategy; so did an optimizer built outside the scope and passed to
# `compile`. Pointing both at the replication strategy makes `fit` on either
# model, and the optimizer's slot creation, use the replicas.


def model_strategy(model: keras.Model) -> tf.distribute.Strategy | None:
    return getattr(model, "_distribute_strategy", None)


def set_model_strategy(model: keras.Model, strategy: tf.distribute.Strategy) -> None:
    model._distribute_strategy = strategy


def optimizer_strategy(
    optimizer: keras.optimizers.Optimizer,
) -> tf.distribute.Strategy | None:
    return getattr(optimizer, "_distribution_strategy", None)


def set_optimizer_strategy(
    optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy
) -> None:
    optimizer._distribution_strategy = strategy


def reset_compiled_functions(model: keras.Model) -> None:
    """Drops a model's traced train/test/predict functions.

    Keras caches them on the model (`make_train_function` returns the cached
    one); after the strategy or variables behind a model change they must be
    traced again.
    """
    model.train_function = None
    model.test_function = None
    model.predict_function = None


# --- First-batch symbolic build under a strategy --------------------------
#
# `TensorFlowTrainer._maybe_symbolic_build` (Keras 3.15) reduces the first
# distributed batch with `strategy.reduce("MEAN", batch, axis=None)` only to
# learn its shapes. With a batch that does not split evenly across replicas
# (e.g. 16 rows on 3 replicas: 6/5/5) the reduction fails with
# "Inputs to operation AddN ... must have the same size and shape", and under
# MultiWorkerMirroredStrategy it fails converting PerReplica to a Tensor
# (keras-team/keras#20585, tensorflow/tensorflow#72388). Using the first local
# replica's values gives the same shapes (all that is used) without any
# cross-replica op.


def symbolic_build_from_local_replica(
    model: keras.Model,
    iterator: object | None = None,
    data_batch: object | None = None,
    select: Callable[[object], object] = lambda batch: batch,
) -> None:
    """Builds `model`'s compile state from one replica's batch shapes.

    Replaces `model._maybe_symbolic_build` for a model whose
    `_distribute_strategy` is set. With `iterator` (Keras's TFEpochIterator)
    the shapes come from its distributed dataset's element spec
    (`_distributed_dataset`, and a `PerReplicaSpec`'s `_value_specs`): no
    batch is read, where Keras's own method reads one and abandons the
    iteration, which with a `PyDataset` sometimes reorders the epoch's
    batches (seen on TF 2.21 / Keras 3.15, native MirroredStrategy too).
    `select` picks Keras's `(x, y, sample_weight)` out of the local batch.
    """
    strategy = model._distribute_strategy
    if iterator is not None:
        data_batch = _local_element_spec(iterator)
    data_batch = tf.nest.map_structure(
        lambda value: strategy.experimental_local_results(value)[0]
        if isinstance(value, tf.distribute.DistributedValues)
        else value,
        data_batch,
    )
    with strategy.scope():
        model._symbolic_build(data_batch=select(data_batch))
    # The metrics now exist (compiled ones are built just above). On Keras
    # 3.5-3.7 Keras created their "sum" counters without an aggregation
    # (see `variables._INITIALIZE_SHAPES`): each replica counted into its
    # own copy. Relocated, they count per replica and sum on read. Skipped
    # from Keras 3.8, which creates them right.
    if not variables.initialize_passes_aggregation():
        variables.relocate_variables(
            [variable for metric in model.metrics for variable in metric.variables], strategy
        )


def _local_element_spec(iterator):
    """One replica's element spec of a TFEpochIterator's distributed dataset."""
    dataset = getattr(iterator, "_distributed_dataset", None)
    spec = getattr(dataset, "element_spec", None)
    if spec is None:
        raise ValueError(
            "Training and evaluation need data with a known structure. "
            f"Received: {type(dataset).__name__} without an element spec. "
            "Pass NumPy arrays, a tf.data.Dataset or a keras.utils.PyDataset."
        )

    def local(leaf):
        value_specs = getattr(leaf, "_value_specs", None)
        return value_specs[0] if value_specs else leaf

    return tf.nest.map_structure(local, spec, expand_composites=False)


def install_symbolic_build(model: keras.Model, select: Callable[[object], object]) -> None:
    """Makes `model` (an instance) build its compile state from one replica."""

    def maybe_symbolic_build(iterator=None, data_batch=None):
        symbolic_build_from_local_replica(model, iterator, data_batch, select)

    # On the instance, past Keras's attribute tracking: the class (and so
    # the saved config) stays the user's.
    model.__dict__["_maybe_symbolic_build"] = maybe_symbolic_build


def remove_symbolic_build(model: keras.Model) -> None:
    """Undoes `install_symbolic_build`."""
    model.__dict__.pop("_maybe_symbolic_build", None)


def install_class_symbolic_build(model_class: type, select: Callable[[object], object]) -> None:
    """Makes every `model_class` build its compile state from one replica.

    For a model class whose instances always have a replication strategy
    (`ParallelModel`): its `_maybe_symbolic_build` is
    `symbolic_build_from_local_replica`, with `select`.
    """

    def _maybe_symbolic_build(model, iterator=None, data_batch=None):
        symbolic_build_from_local_replica(model, iterator, data_batch, select)

    model_class._maybe_symbolic_build = _maybe_symbolic_build


def maybe_symbolic_build(model: keras.Model, data_batch: object) -> None:
    """Keras's `_maybe_symbolic_build(data_batch=...)`: compile state, built once.

    What `fit` runs before its first step; `train_on_batch` & co. call it the
    same way. Same signature on Keras 3.5 to 3.15.
    """
    model._maybe_symbolic_build(data_batch=data_batch)


# `multi_worker.BackupAndRestore` resumes a restarted run where its last
# backup left it (issue 12): at a later epoch and, with a batch-level
# `save_freq`, mid-epoch. Keras 3.15 `fit` has no public argument a callback
# can set for either. Two touches, checked on TF 2.21 / Keras 3.15:
# 1. `Trainer._initial_epoch` (trainers/trainer.py): the TF trainer's `fit`
#    starts at `self._initial_epoch or initial_epoch`, read after
#    `on_train_begin`; Keras's own BackupAndRestore sets it the same way and
#    never resets it, so a later `fit` would start late: we reset it.
# 2. `model.train_function` (backend/tensorflow/trainer.py): `fit` builds it
#    before `on_train_begin` and calls `self.train_function(iterator)` once
#    per step (`steps_per_execution` batches); replacing it for the first
#    steps of the resumed epoch with one that only takes the batches off the
#    iterator skips them without training, so the data lines up with the
#    state restored.


def set_initial_epoch(model: keras.Model, epoch: int | None) -> None:
    """Makes the next (or running) `fit` of `model` start at `epoch`."""
    model._initial_epoch = epoch


def skip_train_steps(model: keras.Model, steps: int) -> None:
    """Makes the next `steps` training steps of `fit` consume data only."""
    original = model.train_function
    if steps <= 0 or original is None:
        return
    batches_per_step = int(getattr(model, "steps_per_execution", 1) or 1)
    remaining = [steps]

    def skip_then_train(iterator):
        if remaining[0] <= 0:
            return original(iterator)
        remaining[0] -= 1
        if remaining[0] == 0:
            model.train_function = original
        for _ in range(batches_per_step):
            next(iterator)
        return {}

    model.train_function = skip_then_train
