# SPDX-License-Identifier: Apache-2.0
"""Keras variables on a strategy: relocation and stateful RNN state.

Upstream surface: Keras's TF backend `Variable` (`_value`, `_dtype`,
`_aggregation`, what `_initialize` passes to `tf.Variable`,
backend/tensorflow/core.py) and
`RNN._create_state_variables` (layers/rnn/rnn.py). Also works around
tensorflow/tensorflow#46488 (BatchNormalization moving statistics drifting
apart across replicas) by giving such variables MEAN aggregation.

Read in the Keras 3.5.0, 3.6.0, 3.7.0, 3.8.0, 3.9.2, 3.10.0, 3.11.3 and 3.15.1 sources (each shape below
lists its own); `tests/internals/test_variables.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import keras
import tensorflow as tf

from parallel_keras._environment import keras_requirement
from parallel_keras._internals import interceptions

# --- Variable relocation --------------------------------------------------
#
# Keras 3's TF backend `Variable` wraps a `tf.Variable` in `_value`, created
# by `Variable._initialize`. A variable created outside `strategy.scope()` is
# a plain tf.Variable and `fit` under the strategy fails (bare AssertionError
# in Keras 3.15). Creating a new tf.Variable inside the scope, from the old
# value and with the arguments `_initialize` passes, gives the same
# MirroredVariable a native build would; the Keras Variable object (what
# layers, the template and the user hold) stays the same, so weights are
# shared, not copied, and the old host copy is released.
#
# Which arguments `_initialize` passes changed twice; one shape per upstream
# form, chosen once at first use (`_initialize_shape`). The Keras names map
# to TensorFlow's public enums here, not through Keras's private
# `_map_aggregation` / `_map_synchronization` (absent before 3.7 / 3.10).


class _InitializeShape(NamedTuple):
    """What Keras's TF `Variable._initialize` passes to `tf.Variable`."""

    description: str
    passes_aggregation: bool
    passes_synchronization: bool
    checked_on: tuple[str, ...]


_INITIALIZE_SHAPES = (
    # keras/src/backend/tensorflow/core.py: `tf.Variable(value, dtype=,
    # trainable=, name=)`; `KerasVariable` has `aggregation` (default "mean")
    # but never passes it on, and no `synchronization`. A metric's "sum"
    # counters then become NONE MirroredVariables, each replica adding to its
    # own copy and reads seeing the first replica's rows only (native
    # MirroredStrategy too), and the optimizer's "only_first_replica"
    # `iterations` fails on a parameter-server layout. parallel_keras passes
    # every aggregation but the default "mean" (every weight, NONE as 3.8+'s
    # default "none"); "sum" counters become per-replica, summed on read.
    _InitializeShape("name, dtype, trainable", False, False, ("3.5.0", "3.6.0")),
    # Adds `aggregation=self._map_aggregation(self.aggregation)` (default
    # "none"); still no `synchronization`, so a metric's "sum" counters
    # become ON_WRITE (AUTO) SUM MirroredVariables: `assign_add` is
    # `assign(self + value)`, and each replica's assign is summed, so every
    # update adds the old total N times (an evaluate over 3 batches on 4
    # replicas weights them 16:4:1; native MirroredStrategy too). Fixed
    # upstream by `Metric.add_variable(..., synchronization="on_read")`
    # (Keras 3.10, below); parallel_keras does the same here.
    _InitializeShape("+ aggregation", True, False, ("3.7.0", "3.8.0", "3.9.2")),
    # Adds `synchronization=self._map_synchronization(...)` (default "auto");
    # `Metric.add_variable` passes "on_read".
    _InitializeShape("+ aggregation, synchronization", True, True, ("3.10.0", "3.11.3", "3.15.1")),
)

_AGGREGATIONS = {
    "none": tf.VariableAggregation.NONE,
    "sum": tf.VariableAggregation.SUM,
    "mean": tf.VariableAggregation.MEAN,
    "only_first_replica": tf.VariableAggregation.ONLY_FIRST_REPLICA,
}
_SYNCHRONIZATIONS = {
    "none": tf.VariableSynchronization.NONE,
    "on_read": tf.VariableSynchronization.ON_READ,
    "on_write": tf.VariableSynchronization.ON_WRITE,
    "auto": tf.VariableSynchronization.AUTO,
}


def _backend_variable_class() -> type:
    """The class of every Keras variable on the TensorFlow backend.

    `keras.src.backend.Variable` (backend/tensorflow/core.py, on Keras 3.8+
    wrapped once more in backend/__init__.py). Not the public
    `keras.Variable`: on Keras 3.5-3.7 that is an export class
    (backend/exports.py) no backend variable is an instance of.
    """
    from keras.src import backend

    return backend.Variable


def is_keras_variable(value: object) -> bool:
    """`isinstance(value, keras.Variable)`, right on every Keras 3.5+."""
    return isinstance(value, _backend_variable_class())


@functools.cache
def _initialize_shape() -> _InitializeShape:
    """The shape of this Keras's `Variable._initialize` (detected once)."""
    backend_variable = _backend_variable_class()
    passes_synchronization = hasattr(backend_variable, "_map_synchronization")
    passes_aggregation = hasattr(backend_variable, "_map_aggregation")
    for shape in _INITIALIZE_SHAPES:
        if (shape.passes_aggregation, shape.passes_synchronization) == (
            passes_aggregation,
            passes_synchronization,
        ):
            return shape
    raise RuntimeError(  # _map_synchronization without _map_aggregation.
        "parallel_keras relocates Keras variables the way Keras's TensorFlow "
        "backend creates them, and this Keras creates them in a form it does "
        f"not know. Received: keras=={keras.__version__}. Install a Keras "
        f"in the tested range: pip install {keras_requirement()}."
    )


def initialize_passes_aggregation() -> bool:
    """Whether this Keras creates tf.Variables with their aggregation (3.7+)."""
    return _initialize_shape().passes_aggregation


def creates_metric_counters_per_replica() -> bool:
    """Whether this Keras creates a metric's "sum" counters right under a
    strategy: per replica, summed on read (Keras 3.10+; see
    `_INITIALIZE_SHAPES`). Before, `relocate_variables` makes them so."""
    return _initialize_shape().passes_synchronization


def variable_synchronization(variable: keras.Variable) -> str:
    """A Keras variable's synchronization ("auto", "on_read", ...).

    The `synchronization` property arrived with Keras 3.10; before, Keras
    never set one (AUTO) unless parallel_keras relocated the variable (and
    recorded it in the same private `_synchronization`).
    """
    return getattr(variable, "_synchronization", "auto")


def _tf_variable_arguments(variable: keras.Variable) -> dict[str, object]:
    """What this Keras's `_initialize` passes besides the initial value."""
    shape = _initialize_shape()
    arguments = {
        "dtype": variable._dtype,
        "trainable": created_trainable(variable),
        "name": variable.name,
    }
    if shape.passes_aggregation:
        arguments["aggregation"] = _AGGREGATIONS[variable.aggregation or "none"]
    if not shape.passes_synchronization and variable.aggregation == "sum":
        # Keras < 3.10's `assign_add` is `assign(self + value)`: an on-write
        # SUM adds the old value up once per replica. Per-replica counters
        # summed on read (Keras 2's and Keras 3.10+'s metrics) count each
        # row once.
        arguments["aggregation"] = tf.VariableAggregation.SUM
        arguments["synchronization"] = tf.VariableSynchronization.ON_READ
    elif not shape.passes_aggregation and variable.aggregation not in (None, "mean"):
        # e.g. the optimizer's `iterations` ("only_first_replica").
        arguments["aggregation"] = _AGGREGATIONS[variable.aggregation]
    if shape.passes_synchronization:
        arguments["synchronization"] = _SYNCHRONIZATIONS[variable_synchronization(variable)]
    return arguments


def replica_aggregation(variable: keras.Variable) -> str:
    """How the replicas' updates of a Keras variable combine, in Keras's names.

    What TensorFlow does, read from the tf.Variable behind it: on Keras 3.7+
    the same as `variable.aggregation`; on Keras 3.5-3.6 a weight's Keras
    `aggregation` ("mean" by default) is never passed on (shape "name, dtype,
    trainable" above), so its replicas update their own copies ("none"),
    as Keras 3.8+'s default weights do.
    """
    value = getattr(variable, "_value", None)
    aggregation = getattr(value, "aggregation", None)
    if aggregation is not None:  # tf.VariableAggregation (V1 or V2).
        for name, member in _AGGREGATIONS.items():
            if member == aggregation:
                return name
    return variable.aggregation or "none"


def keras_variable_value(variable: keras.Variable) -> tf.Variable:
    """The tf.Variable behind a Keras variable (private `_value`)."""
    return variable._value


def relocate_variables(
    variables: Iterable[keras.Variable],
    strategy: tf.distribute.Strategy,
    synchronize: Callable[[keras.Variable], tuple[str, str] | None] = lambda v: None,
) -> int:
    """Re-creates each variable's tf.Variable under `strategy.scope()`.

    `synchronize(variable)` may return `(aggregation, synchronization)` (Keras
    names: "mean", "on_write", "on_read", "only_first_replica") to give the
    relocated variable, on every Keras shape (also where Keras itself would
    not pass them on). Used for state assigned on each replica:
    BatchNormalization's moving statistics get MEAN aggregation, so they are
    averaged across replicas instead of drifting apart
    (tensorflow/tensorflow#46488: the saved file disagrees with what was
    evaluated); a stateful RNN's states are per-replica (ON_READ), each
    replica keeping its own rows' state.

    Returns:
        The number of variables that were relocated.
    """
    give_distributed_variables_python_numbers()
    moved = 0
    for variable in variables:
        current = variable._value
        if current is None:
            continue  # Not initialized yet: it will be built in scope.
        wanted = synchronize(variable)
        arguments = _tf_variable_arguments(variable)
        if _lives_in(current, strategy) and (
            (variable.aggregation, variable_synchronization(variable)) == wanted
            if wanted is not None
            else _created_as(current, arguments)
        ):
            continue
        if wanted is not None:
            variable._aggregation, variable._synchronization = wanted
            arguments["aggregation"] = _AGGREGATIONS[wanted[0]]
            arguments["synchronization"] = _SYNCHRONIZATIONS[wanted[1]]
        # Read outside the scope: a variable of another strategy can only be
        # read in its own scope or in none. One variable at a time, so the
        # host never holds a second copy of the whole model.
        with tf.init_scope():
            initial = tf.identity(current.read_value())
        with strategy.scope(), tf.init_scope():
            variable._value = tf.Variable(initial, **arguments)
        del initial
        moved += 1
    return moved


# A Keras variable converts to a Python number with `float(self.value)` /
# `int(self.value)` (backend/common/variables.py, Keras 3.15.1), which is the
# tf.Variable behind it: TF 2.21's `DistributedVariable`
# (distribute/values.py) defines neither `__float__` nor `__int__`, so
# `float(parallel.optimizer.learning_rate)` or `int(optimizer.iterations)`,
# fine on one device, raised TypeError for a variable in the strategy. In
# cross-replica context its `read_value()` is one device's value (the
# primary copy, or the replicas' aggregate for an ON_READ variable).


@functools.cache
def give_distributed_variables_python_numbers() -> None:
    """Once: `float()` and `int()` of a tf.distribute variable read its value."""
    from tensorflow.python.distribute import ps_values, values

    # CentralStorageStrategy's `AggregatingVariable` lacks them alike.
    for cls in (values.DistributedVariable, ps_values.AggregatingVariable):
        for name, number in (("__float__", float), ("__int__", int)):
            if name in vars(cls):
                continue  # Shipped by this TensorFlow, or added already.
            interceptions.patch(
                cls,
                name,
                functools.partialmethod(_read_as, number),
                by=__name__,
                when="at the first Keras variable relocated onto a strategy "
                "(multi_gpu_model, ParallelModel)",
                why=f"{number.__name__}() of a tf.distribute variable reads its "
                "value, as Keras 2 scripts do with a relocated learning rate or "
                "step counter (TensorFlow's own tf.Variable has it).",
            )


def _read_as(variable: Any, number: Callable[[Any], Any]) -> Any:
    return number(variable.read_value())


def created_trainable(variable: keras.Variable) -> bool:
    """Whether the variable was created trainable (its tf.Variable's flag).

    Keras 3.15 sets `Variable.trainable` when a layer's `trainable` changes
    (layers/layer.py), but the tf.Variable behind it keeps the flag it was
    created with, which is what `tf.GradientTape` watches. A frozen layer's
    weights (a GAN's discriminator while the combined model is wrapped) are
    still weights: relocated with `trainable=False`, no gradient would ever
    reach them again, even once the layer is unfrozen. Moving statistics
    were created non-trainable.
    """
    value = getattr(variable, "_value", None)
    if value is None:
        return bool(variable.trainable)
    return bool(value.trainable)


def _created_as(value: tf.Variable, arguments: dict[str, object]) -> bool:
    """Whether `value` already has the aggregation (and ON_READ) `arguments` give."""
    aggregation = arguments.get("aggregation")
    if aggregation is not None and value.aggregation != aggregation:
        return False
    on_read = tf.VariableSynchronization.ON_READ
    return arguments.get("synchronization") != on_read or value.synchronization == on_read


def _lives_in(value: tf.Variable, strategy: tf.distribute.Strategy) -> bool:
    distributed = getattr(value, "_distribute_strategy", None)
    return distributed is strategy


# --- Stateful RNN state -----------------------------------------------------
#
# Keras 3.15 `RNN._create_state_variables` (layers/rnn/rnn.py) creates a
# stateful layer's states as `backend.Variable`s under
# `no_automatic_dependency_tracking`, held in `layer.states`: they are not in
# `model.variables`, so relocating a model's variables misses them.


def rnn_state_variables(layer: keras.layers.Layer) -> list[keras.Variable]:
    """The state variables of a stateful RNN layer (empty if not built)."""
    states = getattr(layer, "states", None)
    if not getattr(layer, "stateful", False) or states is None:
        return []
    return [state for state in tf.nest.flatten(states) if is_keras_variable(state)]
