"""Every dependence of parallel_keras on private Keras / TensorFlow internals.

Nothing else in the package touches private attributes or imports
`keras.src`. Each piece names the upstream behaviour it relies on or works
around and the versions it was checked on; `tests/test_internals.py` fails
loudly when an upgrade changes any of them.

Checked on TensorFlow 2.21.0 with Keras 3.15.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import itertools

import keras
import tensorflow as tf

CHECKED_VERSIONS = {"tensorflow": "2.21.0", "keras": "3.15.1"}


# --- Variable relocation --------------------------------------------------
#
# Keras 3's TF backend `Variable` wraps a `tf.Variable` in `_value`, created
# by `Variable._initialize` with the aggregation mapped by `_map_aggregation`.
# A variable created outside `strategy.scope()` is a plain tf.Variable and
# `fit` under the strategy fails (bare AssertionError in Keras 3.15). Creating
# a new tf.Variable inside the scope, from the old value and with the same
# arguments `_initialize` uses, gives the same MirroredVariable a native build
# would; the Keras Variable object (what layers, the template and the user
# hold) stays the same, so weights are shared, not copied, and the old
# host copy is released.


def keras_variable_value(variable: keras.Variable) -> tf.Variable:
    """The tf.Variable behind a Keras variable (private `_value`)."""
    return variable._value


def relocate_variables(
    variables: Iterable[keras.Variable],
    strategy: tf.distribute.Strategy,
    mean_aggregated: Callable[[keras.Variable], bool] = lambda v: False,
) -> int:
    """Re-creates each variable's tf.Variable under `strategy.scope()`.

    Variables for which `mean_aggregated` is true are given MEAN aggregation,
    so an assignment made on each replica (BatchNormalization's moving
    statistics) is averaged across replicas instead of leaving every replica
    with its own value (tensorflow/tensorflow#46488: the replicas' moving
    statistics drift apart and the saved file disagrees with what was
    evaluated).

    Returns:
        The number of variables that were relocated.
    """
    moved = 0
    with strategy.scope():
        for variable in variables:
            current = variable._value
            if current is None:
                continue  # Not initialized yet: it will be built in scope.
            if _lives_in(current, strategy) and not (
                mean_aggregated(variable) and variable.aggregation != "mean"
            ):
                continue
            if mean_aggregated(variable):
                variable._aggregation = "mean"
            with tf.init_scope():
                initial = tf.identity(current.read_value())
                variable._value = tf.Variable(
                    initial,
                    dtype=variable._dtype,
                    trainable=variable.trainable,
                    name=variable.name,
                    aggregation=variable._map_aggregation(variable.aggregation),
                    synchronization=variable._map_synchronization(
                        variable.synchronization
                    ),
                )
            moved += 1
    return moved


def _lives_in(value: tf.Variable, strategy: tf.distribute.Strategy) -> bool:
    distributed = getattr(value, "_distribute_strategy", None)
    return distributed is strategy


def variable_devices(variable: keras.Variable) -> list[str]:
    """Devices holding a copy of a Keras variable (one per replica)."""
    value = variable._value
    if hasattr(value, "values"):
        return [component.device for component in value.values]
    return [value.device]


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


def optimizer_strategy(optimizer: keras.optimizers.Optimizer):
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


class SymbolicBuildFromLocalReplica:
    """Mixin for a Keras model: builds its compile state from one replica."""

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self._distribute_strategy is None:
            return super()._maybe_symbolic_build(
                iterator=iterator, data_batch=data_batch
            )
        strategy = self._distribute_strategy
        if iterator is not None:
            for _, _, batch_iterator in iterator:
                batch = next(batch_iterator)
                data_batch = tf.nest.map_structure(
                    lambda value: strategy.experimental_local_results(value)[0]
                    if isinstance(value, tf.distribute.DistributedValues)
                    else value,
                    batch,
                )
                break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)


# --- Collective keys shared across strategies -----------------------------
#
# tensorflow/tensorflow#61314: every `CollectiveAllReduce` built by
# MirroredStrategy starts its collective group and instance keys at the same
# values, and the process-wide collective executor keeps the groups it has
# seen. After training under a 4-device strategy, a new 2- or 3-device
# strategy in the same process fails in its first step (InternalError in
# CollectiveReduceV2). Giving each strategy its own key range keeps their
# groups apart.

_GROUP_KEY_BLOCK = 1_000_000
_group_key_blocks = itertools.count(1)


def collective_all_reduce(devices: list[str]) -> tf.distribute.CrossDeviceOps:
    """An all-reduce among `devices` whose collective keys no strategy shares."""
    from tensorflow.python.distribute import cross_device_ops  # pylint: disable=g-direct-tensorflow-import
    from tensorflow.python.distribute import cross_device_utils  # pylint: disable=g-direct-tensorflow-import

    keys = cross_device_utils.CollectiveKeys(
        group_key_start=1 + next(_group_key_blocks) * _GROUP_KEY_BLOCK
    )
    return cross_device_ops.CollectiveAllReduce(
        devices=list(devices),
        group_size=len(devices),
        options=tf.distribute.experimental.CommunicationOptions(),
        collective_keys=keys,
    )
