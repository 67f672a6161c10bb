# SPDX-License-Identifier: Apache-2.0
"""Keras's random seed generators on replicas: seedless random ops and layers'
own generators.

Upstream surface: Keras 3's global `SeedGenerator` kept in `global_state`
(random/seed_generator.py: `global_seed_generator`, `make_default_seed`,
`GLOBAL_SEED_GENERATOR` from 3.8) and `Layer._seed_generators`
(layers/layer.py). Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3 and 3.15.1
sources. Canaries: `tests/internals/test_seed_generators.py`.

When each is set up:

- Layers' own generators: once, when `multi_gpu_model` adopts the template
  (`data_parallel.template_adoption`, undone by `TemplateAdoption.undo`).
- Seedless random ops: Keras's global generator is pointed at the replica's
  stream in each replica's traced step (`use_replica_seed_generator`), and
  cannot be set up once at adoption or `compile`. Keras keeps it in a
  `threading.local` (backend/common/global_state.py `GLOBAL_STATE_TRACKER`),
  and MirroredStrategy runs every `strategy.run`, so every trace of a step,
  in replica threads it makes for that call (TensorFlow 2.16-2.21
  distribute/mirrored_run.py `_call_for_each_replica`: "Create these
  threads once instead of during every call"), which carry none of Keras's
  per-thread state (canary:
  `test_mirrored_replicas_start_each_run_in_new_threads_without_keras_state`).
  Anything set before the step would have to replace Keras's module-level
  tracker or TensorFlow's private thread start-up for the whole process,
  changing seedless random ops for every model, one device included. What
  the step sets is one attribute of its own new thread's Keras state (no
  method of any object); the state it draws from, one counter variable per
  strategy, is made once, eagerly, before the first step is traced
  (`make_replica_seeds`, when a run starts).
"""

from __future__ import annotations

import random
import threading
import weakref

import keras
import tensorflow as tf

from parallel_keras._internals import variables

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
# variable shared by the replicas mixed with the replica's id: every replica
# draws its own noise, as Keras 2's towers (one random op per tower) did.
#
# The counter is created eagerly when a run starts (`make_replica_seeds`),
# never inside a trace: a `tf.function` whose first trace creates a variable
# is traced a second time, without variable creation (TF 2.16-2.21
# polymorphic_function.py `Function._call`: `_initialize`, then
# `_no_variable_creation_config`). Created in the first trace, the counter
# made Keras trace the whole train step twice: for a deep model on 4
# replicas, minutes before step 1 (`python -m benchmarks first-step`).

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
    than one device. The counter variable is made before any step (see
    `make_replica_seeds`); its seed is derived from Python's random state
    without drawing from it, and the draw one device makes is made when a
    seedless op first runs.
    """

    def __init__(self):
        state_seed = random.Random(hash(random.getstate())).randint(1, int(1e9))
        # ONLY_FIRST_REPLICA: every replica advances it alike. Outside any
        # function (made in a trace only by `use_replica_seed_generator`'s
        # fallback, and then lifted out of it).
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


def make_replica_seeds(strategy: tf.distribute.Strategy) -> None:
    """Creates `strategy`'s replica seed counter now, outside any trace.

    Called eagerly where a run of a model on `strategy` starts, before
    Keras traces its step functions; a no-op once made, and on one replica.
    """
    if strategy.num_replicas_in_sync == 1 or strategy in _REPLICA_SEEDS:
        return
    with strategy.scope():
        _REPLICA_SEEDS[strategy] = _ReplicaSeeds()


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
        # A step traced without a run before it (`make_replica_seeds`): the
        # function that creates the counter is traced twice.
        shared = _REPLICA_SEEDS[strategy] = _ReplicaSeeds()
    generator = _replica_seed_generator_class()(shared, int(replica))
    # The key's constant exists from Keras 3.8; 3.5-3.7 spell it inline.
    key = getattr(seed_generator, "GLOBAL_SEED_GENERATOR", "global_seed_generator")
    global_state.set_global_attribute(key, generator)


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
# draws its own noise, as Keras 2's towers did. `data_parallel.
# template_adoption` does it once, at `multi_gpu_model`, and undoes it.


def layer_seed_generators(model: keras.Model) -> list:
    """The seed generators of `model`'s layers not yet drawing per replica."""
    generators = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if hasattr(layer, "state_size") or isinstance(layer, keras.layers.RNN):
            # An RNN cell draws its dropout masks inside the RNN's while loop,
            # where a per-replica update of the generator's state makes the
            # replicas trace different merge calls ("Values to regroup had
            # different lengths"): RNN dropout keeps Keras's own generator.
            continue
        for generator in getattr(layer, "_seed_generators", ()):
            if "next" not in generator.__dict__ and generator not in generators:
                generators.append(generator)
    return generators


def replicate_seed_generators(generators: list, strategy: tf.distribute.Strategy) -> None:
    """Makes `generators` (from `layer_seed_generators`) draw per replica on `strategy`."""
    for generator in generators:
        variables.relocate_variables(
            [generator.state],
            strategy,
            synchronize=lambda variable: ("only_first_replica", "on_write"),
        )
        generator.__dict__["next"] = _next_per_replica(generator.next)


def restore_seed_generators(generators: list) -> None:
    """Gives `generators` their own `next` back (their state is the caller's)."""
    for generator in generators:
        generator.__dict__.pop("next", None)


def _next_per_replica(next_seed):
    def next_per_replica(ordered=True):
        seed = next_seed(ordered)
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return seed
        replica = tf.cast(context.replica_id_in_sync_group, seed.dtype)
        return seed + tf.stack([replica * 104729, tf.zeros([], seed.dtype)])

    return next_per_replica
