# SPDX-License-Identifier: Apache-2.0
"""Keras's trainer: loss trackers, metric order, default steps, the strategy
captured at construction, the first-batch symbolic build, resuming `fit`,
and what a step on replicas needs: clipping after the all-reduce, random
ops per replica, Python data read one batch per step, and metrics under
CentralStorageStrategy.

Upstream surface: Keras 3 `Trainer` / `TensorFlowTrainer`
(trainers/trainer.py, trainers/compile_utils.py,
backend/tensorflow/trainer.py), `TFOptimizer` (`_distribution_strategy`,
`_clip_gradients`, `_all_reduce_sum_gradients`), the global and layer-owned
`SeedGenerator`s (random/seed_generator.py, `Layer._seed_generators`) and
`TFEpochIterator._distributed_dataset` and the data adapters of Python data
(trainers/epoch_iterator.py, trainers/data_adapters/), the multi-step loop
(`_make_function`, or `make_train_function` before 3.7). Works around Keras's `_maybe_symbolic_build` reducing the first distributed
batch across replicas (keras-team/keras#20585, tensorflow/tensorflow#72388).

Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3 and 3.15.1 sources (3.6.0 and
3.7.0 for the multi-step loop). Where a touch has one upstream form on all of
them its comment says so or names Keras 3.15; where forms differ (the loss
under a strategy, several steps per execution) each
form lists the versions it was checked on and one is chosen once, at first
use. `tests/internals/test_trainer.py` fails when an upgrade changes what this
relies on, or when the symbolic-build defect is fixed upstream (so the
workaround can go).
"""

from __future__ import annotations

import functools
import random
import threading
import weakref
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from parallel_keras._environment import keras_requirement
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
    from keras.src.backend.tensorflow import trainer

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
    from keras.src.losses import loss as loss_module

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
        require_multi_step_support(iterator)
        data_batch = _local_element_spec(iterator)
    data_batch = tf.nest.map_structure(
        lambda value: (
            strategy.experimental_local_results(value)[0]
            if isinstance(value, tf.distribute.DistributedValues)
            else value
        ),
        data_batch,
    )
    with strategy.scope():
        model._symbolic_build(data_batch=select(data_batch))
    # The metrics now exist (compiled ones are built just above). Before
    # Keras 3.10 Keras created their "sum" counters wrong under a strategy
    # (see `variables._INITIALIZE_SHAPES`): 3.5-3.6 without an aggregation,
    # each replica counting into its own copy; 3.7-3.9 on-write SUM, adding
    # the old total once per replica. Relocated, they count per replica and
    # sum on read. Skipped from Keras 3.10, which creates them so.
    if not variables.creates_metric_counters_per_replica():
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


def install_class_symbolic_build(
    model_class: type[Any],
    select: Callable[..., object],
    before: Callable[[keras.Model], None] | None = None,
) -> None:
    """Makes every `model_class` build its compile state from one replica.

    For a model class whose instances always have a replication strategy
    (`ParallelModel`): its `_maybe_symbolic_build` runs `before(model)`, then
    `symbolic_build_from_local_replica` with `select(model, batch)`.
    """

    def _maybe_symbolic_build(model, iterator=None, data_batch=None):
        if before is not None:
            before(model)
        symbolic_build_from_local_replica(
            model, iterator, data_batch, lambda batch: select(model, batch)
        )

    model_class._maybe_symbolic_build = _maybe_symbolic_build


def maybe_symbolic_build(model: keras.Model, data_batch: object) -> None:
    """Keras's `_maybe_symbolic_build(data_batch=...)`: compile state, built once.

    What `fit` runs before its first step; `train_on_batch` & co. call it the
    same way. Same signature on Keras 3.5 to 3.15.
    """
    model._maybe_symbolic_build(data_batch=data_batch)


# `multi_worker.BackupAndRestore` resumes a restarted run where its last
# backup left it: at a later epoch and, with a batch-level
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


def skip_train_rows(
    model: keras.Model,
    rows: int,
    batch_rows: Callable[[object], int],
    done: Callable[[int, int], None],
) -> None:
    """Makes the next training steps of `fit` consume `rows` rows, untrained.

    As `skip_train_steps`, counting rows instead of steps, so a run resumed
    with another batch size skips what was trained. Each skipped
    step takes `steps_per_execution` batches; `batch_rows(batch)` counts a
    batch's rows. Once at least `rows` rows were taken, `done(rows_taken,
    batches_taken)` is called and training goes on.
    """
    original = model.train_function
    if rows <= 0 or original is None:
        return
    batches_per_step = int(getattr(model, "steps_per_execution", 1) or 1)
    taken = [0, 0]

    def skip_then_train(iterator):
        for _ in range(batches_per_step):
            taken[0] += batch_rows(next(iterator))
            taken[1] += 1
        if taken[0] >= rows:
            model.train_function = original
            done(*taken)
        return {}

    model.train_function = skip_then_train


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


# --- Seedless random ops on replicas ----------------------------------------
#
# Keras 3.15 draws the seed of a random op called without one
# (`keras.random.normal(shape)`, the form of Keras 2's `K.random_normal`)
# from a global `SeedGenerator` kept in `global_state`, a `threading.local`
# (random/seed_generator.py `global_seed_generator`). tf.distribute runs each
# replica in a thread of its own, freshly made each time a step is traced, so
# each trace creates new generator variables inside the function: "tf.function
# only supports singleton tf.Variables created on the first call". Each
# replica thread is given a generator instead, drawing from one counter
# variable shared by the replicas (created once, on the first trace) mixed
# with the replica's id: every replica draws its own noise, as Keras 2's
# towers (one random op per tower) did.

_REPLICA_SEEDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _ReplicaSeeds:
    """State shared by the replicas' seed generators of one strategy.

    Its seed is drawn from Python's `random` only when a seedless random op
    first asks for one, as one device's global `SeedGenerator` is made only
    then (`make_default_seed`, random/seed_generator.py, Keras 3.15.1). A
    draw at every first trace moved Python's random state for the model's
    other readers: `fit(shuffle=True)` orders a `PyDataset`'s batches with
    `random.shuffle` (trainers/data_adapters/py_dataset_adapter.py), so from
    the second epoch on the parallel model trained on other batch orders
    than one device. The counter variable is still made on the first trace
    (tf.function creates variables only then); its seed is derived from
    Python's random state without drawing from it, and the draw one device
    makes is made when a seedless op first runs.
    """

    def __init__(self):
        state_seed = random.Random(hash(random.getstate())).randint(1, int(1e9))
        # Created in the replica context on the first trace, lifted out of the
        # function; ONLY_FIRST_REPLICA: every replica advances it alike.
        with tf.init_scope():
            self.counter = tf.Variable(
                [state_seed, 0],
                dtype="int32",
                trainable=False,
                name="parallel_keras_replica_seed",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
        self._drawn = False
        self._lock = threading.Lock()

    def draw_as_one_device(self) -> None:
        """Draws from Python's `random` once, as one device's first seedless op."""
        with self._lock:
            if self._drawn:
                return
            self._drawn = True
        from keras.src.random import seed_generator

        seed_generator.make_default_seed()


_REPLICA_SEED_GENERATOR_CLASS: list[type] = []


def _replica_seed_generator_class():
    if _REPLICA_SEED_GENERATOR_CLASS:
        return _REPLICA_SEED_GENERATOR_CLASS[0]
    from keras.src.random import seed_generator

    class ReplicaSeedGenerator(seed_generator.SeedGenerator):
        """A `SeedGenerator` whose seeds differ per replica (no variable of its own)."""

        def __init__(self, shared: _ReplicaSeeds, replica: int):
            self.name = f"replica_{replica}_seed_generator"
            self.backend = keras.backend
            self._initial_seed = None
            self._shared = shared
            self._replica = replica

        @property
        def state(self):
            return self._shared.counter

        def next(self, ordered=True):
            self._shared.draw_as_one_device()
            counter = self._shared.counter
            value = tf.identity(counter)
            counter.assign_add(tf.constant([0, 1], "int32"))
            # Distinct streams per replica: the replica offsets the first word.
            return value + tf.constant([self._replica * 104729, 0], "int32")

    _REPLICA_SEED_GENERATOR_CLASS.append(ReplicaSeedGenerator)
    return ReplicaSeedGenerator


# Python-level bookkeeping run while a step is traced: not converted (Keras's
# own step functions are not either).
@tf.autograph.experimental.do_not_convert
def use_replica_seed_generator() -> None:
    """In a replica's step: seedless random ops draw from this replica's stream."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    if replica is None:
        return
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    strategy = tf.distribute.get_strategy()
    shared = _REPLICA_SEEDS.get(strategy)
    if shared is None:
        shared = _REPLICA_SEEDS[strategy] = _ReplicaSeeds()
    generator = _replica_seed_generator_class()(shared, int(replica))
    # The key's constant exists from Keras 3.8; 3.5-3.7 spell it inline.
    key = getattr(seed_generator, "GLOBAL_SEED_GENERATOR", "global_seed_generator")
    global_state.set_global_attribute(key, generator)


# --- Python data read one batch per step ------------------------------------
#
# Keras 3's `TFEpochIterator.__init__` (backend/tensorflow/trainer.py) makes
# `_distributed_dataset`, the strategy's distributed dataset over its data
# adapter's `get_tf_dataset()` (trainers/data_adapters/), and every epoch or
# evaluation iterates `iter(self._distributed_dataset)` (Keras 3.15.1 through
# `_get_iterator()`; 3.5.0 directly). For a Python generator
# (`GeneratorDataAdapter`) or a `PyDataset` (`PyDatasetAdapter`) that
# dataset calls the user's Python code. One device iterates it as it is;
# tf.distribute's iterator reads global batches ahead into every device's
# buffer, so a generator is read more often than on one device, a
# `PyDataset`'s `on_epoch_end` comes after batches of the next pass were
# read, and the next iterator over a generator (Keras 3.15 makes one per
# evaluation and its adapter re-yields the 2 batches it peeked at,
# `peek_and_restore`; on 3.5 one stream) starts elsewhere in the stream.
# `read_python_data_per_step` gives such an iterator another iterable in
# `_distributed_dataset`. Checked on Keras 3.5.0 and 3.15.1.

_EPOCH_ITERATOR_SOURCES: list[Callable[[Any], Any]] = []


def steps_take_python_iterators() -> bool:
    """Whether Keras's train/test functions run the steps of a plain Python
    iterator one by one (Keras 3.7+: `_make_function`'s `function` calls
    `one_step_on_data` per batch for an iterator that is not a tf.data or
    distributed one; checked 3.15.1). Keras 3.5-3.6 trace `next(iterator)`
    into a `tf.function`, where a Python iterator is read once, at tracing
    (checked 3.5.0): there Python data keeps tf.distribute's pipeline."""
    return _multi_step_stops_at_data_end()


def is_python_data(iterator: Any) -> bool:
    """Whether a Keras epoch iterator reads a Python generator or a `PyDataset`."""
    from keras.src.trainers.data_adapters import generator_data_adapter, py_dataset_adapter

    return isinstance(
        getattr(iterator, "data_adapter", None),
        (generator_data_adapter.GeneratorDataAdapter, py_dataset_adapter.PyDatasetAdapter),
    )


def epoch_iterator_dataset(iterator: Any) -> tf.data.Dataset:
    """The dataset a Keras epoch iterator's adapter makes, without the
    `prefetch(AUTOTUNE)` both adapters end with (a `PyDataset` without
    workers; with workers, Keras's enqueuer reads ahead, on one device too).

    One device's prefetch reads a batch ahead at a moment that depends on
    timing (before or after a `PyDataset`'s `on_epoch_end`, seen both ways
    on one machine); without it a batch is read when its step runs. The
    prefetch is TensorFlow's `_PrefetchDataset` over `_input_dataset`
    (data/ops/prefetch_op.py, checked on TF 2.21).
    """
    from tensorflow.python.data.ops import prefetch_op

    dataset = iterator.data_adapter.get_tf_dataset()
    if isinstance(dataset, prefetch_op._PrefetchDataset):
        dataset = dataset._input_dataset
    return dataset


def epoch_iterator_strategy(iterator: Any) -> tf.distribute.Strategy | None:
    return getattr(iterator, "_distribute_strategy", None)


def read_python_data_per_step(source: Callable[[Any], Any]) -> None:
    """Once: a new `TFEpochIterator` iterates `source(iterator)` where that is not None.

    `source` is called when Keras makes the iterator (in `fit`, `evaluate`,
    `predict`); it returns an iterable (with an `element_spec`) to iterate
    instead of the strategy's distributed dataset, or None to keep that.
    """
    if _EPOCH_ITERATOR_SOURCES:
        _EPOCH_ITERATOR_SOURCES[:] = [source]
        return
    from keras.src.backend.tensorflow import trainer

    _EPOCH_ITERATOR_SOURCES.append(source)
    original = trainer.TFEpochIterator.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        replacement = _EPOCH_ITERATOR_SOURCES[0](self)
        if replacement is not None:
            self._distributed_dataset = replacement

    trainer.TFEpochIterator.__init__ = __init__


# --- Several steps per execution at an epoch's end ---------------------------
#
# `compile(steps_per_execution=N)` runs N steps in one traced function. Two
# upstream shapes, chosen once:
# 1. Keras 3.7+ (checked 3.8.0, 3.10.0, 3.11.3, 3.15.1):
#    `TensorFlowTrainer._make_function` loops over
#    `iterator.get_next_as_optional()` and stops at the data's end, so an
#    epoch of any length trains as one step at a time.
# 2. Keras 3.5-3.6 (checked 3.5.0): `make_train_function`'s
#    `multi_step_on_iterator` calls `next(iterator)` N times; an epoch whose
#    batches are not a multiple of N ends in an OutOfRange inside the
#    execution, and trains otherwise than one step at a time (one device
#    too: 18 optimizer steps for 15 batches, 3 epochs of 5 with N=3).
#    parallel_keras cannot change that loop from outside: refused at the
#    start of such a `fit`/`evaluate`, before any step.

MULTI_STEP_MIN_KERAS = (3, 7)


class StepsPerExecutionNeedsNewerKeras(RuntimeError):
    """This Keras runs several steps per execution past an epoch's end."""


@functools.cache
def _multi_step_stops_at_data_end() -> bool:
    from keras.src.backend.tensorflow import trainer

    return callable(getattr(trainer.TensorFlowTrainer, "_make_function", None))


def require_multi_step_support(iterator) -> None:
    """Raises `StepsPerExecutionNeedsNewerKeras` for an epoch this Keras's
    multi-step loop would run past (Keras 3.5-3.6 only)."""
    steps = int(getattr(iterator, "steps_per_execution", 1) or 1)
    if steps == 1 or _multi_step_stops_at_data_end():
        return
    batches = getattr(iterator, "num_batches", None)
    if batches is not None and batches % steps == 0:
        return
    epoch = "an unknown number of" if batches is None else str(batches)
    minimum = ".".join(map(str, MULTI_STEP_MIN_KERAS))
    raise StepsPerExecutionNeedsNewerKeras(
        "Several steps per execution (compile(steps_per_execution=N)) over an "
        "epoch whose batches are not a multiple of N need Keras "
        f"{minimum} or newer, the first whose multi-step loop stops at the "
        "end of the data; older Keras runs past it and trains otherwise than "
        f"one step at a time. Received: keras=={keras.__version__}, "
        f"steps_per_execution={steps}, {epoch} batches per epoch. Upgrade: "
        f"pip install {keras_requirement(MULTI_STEP_MIN_KERAS)}, or use a steps_per_execution "
        "that divides the batches of an epoch (or steps_per_epoch)."
    )


# --- Metric variables under CentralStorageStrategy --------------------------
#
# `CentralStorageStrategy` (TF 2.21) keeps one copy of every variable, an
# `AggregatingVariable` (distribute/ps_values.py): an assign made in replica
# context is a `merge_call` that assigns the replicas' values combined by the
# variable's aggregation (SUM for Keras's metric variables). Keras 3.15's
# `Variable.assign_add(value)` is `assign(self + value)`
# (backend/common/variables.py), so every replica's update adds the old
# total once more: N * old + the replicas' values, from the second batch on.
# parallel_keras updates the loss tracker and compiled metrics in
# cross-replica context instead (assigned once), and corrects the per-output
# loss trackers that Keras's `compute_loss` updates on each replica. The
# same on every Keras checked (3.5.0 to 3.15.1): below 3.10 the metric
# variables are first relocated (`symbolic_build_from_local_replica`; on
# 3.5-3.7 Keras's own are unaggregated and a replica-context update raises),
# after which they double count alike.


def sums_replica_assigns(strategy) -> bool:
    """Whether an assign in replica context sums the replicas' assigned values."""
    return isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy)


def correct_summed_assigns(before, num_replicas: int) -> None:
    """Undoes the extra `(N - 1) * old` of replica-context `assign_add`s.

    `before` holds `(metric, (total, count))`: a `Mean`'s values read before
    its replicas' updates. Called in cross-replica context, after them.
    """
    for metric, old_values in before:
        for variable, old in zip((metric.total, metric.count), old_values):
            old = tf.distribute.get_strategy().experimental_local_results(old)[0]
            variable.assign(variable.value - (num_replicas - 1) * old)


# --- Layers' own seed generators on replicas --------------------------------
#
# A layer that draws random numbers with a seed (Dropout, GaussianNoise, a
# custom layer holding `keras.random.SeedGenerator`) keeps it in the private
# `Layer._seed_generators` (layers/layer.py, Keras 3.15); `SeedGenerator.next`
# assigns its `state` variable, its tf.Variable created unaggregated (Keras
# 3.8+ say aggregation "none"; 3.5-3.7 say "mean" but never pass it on:
# the same tf.Variable, checked on 3.5.0 to 3.15.1). On
# CentralStorageStrategy's replicas an assign to such a variable raises ("You
# must specify an aggregation method to update a AggregatingVariable in
# Replica Context"); on MirroredStrategy's every replica draws the same seed.
# The state is given ONLY_FIRST_REPLICA aggregation (every replica advances
# it alike) and each replica's seed is offset by its id, so each replica
# draws its own noise, as Keras 2's towers did.


def replicate_seed_generators(model: keras.Model, strategy: tf.distribute.Strategy) -> None:
    """Makes the seed generators of `model`'s layers draw per replica on `strategy`."""
    from parallel_keras._internals import variables

    for layer in model._flatten_layers(include_self=True, recursive=True):
        if hasattr(layer, "state_size") or isinstance(layer, keras.layers.RNN):
            # An RNN cell draws its dropout masks inside the RNN's while loop,
            # where a per-replica update of the generator's state makes the
            # replicas trace different merge calls ("Values to regroup had
            # different lengths"): RNN dropout keeps Keras's own generator.
            continue
        for generator in getattr(layer, "_seed_generators", ()):
            variables.relocate_variables(
                [generator.state],
                strategy,
                synchronize=lambda variable: ("only_first_replica", "on_write"),
            )
            if "next" not in generator.__dict__:
                generator.__dict__["next"] = _next_per_replica(generator.next)


def _next_per_replica(next_seed):
    def next_per_replica(ordered=True):
        seed = next_seed(ordered)
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return seed
        replica = tf.cast(context.replica_id_in_sync_group, seed.dtype)
        return seed + tf.stack([replica * 104729, tf.zeros([], seed.dtype)])

    return next_per_replica


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


# --- Sublayers of a layer ------------------------------------------------------
#
# A model lists its layers (`Model.layers`); any other layer holding layers
# (a wrapper such as `Bidirectional`, a custom layer with layer attributes)
# lists them only in Keras's private `Layer._layers` (layers/layer.py, the
# tracker's "layers" collection; the same on Keras 3.5 to 3.15).


def child_layers(layer: keras.layers.Layer) -> list:
    """The layers directly inside `layer` (a model's `layers`, else Keras's
    tracked sublayers)."""
    return list(getattr(layer, "layers", None) or getattr(layer, "_layers", None) or [])
