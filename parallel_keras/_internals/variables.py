"""Keras variables on a strategy: relocation and stateful RNN state.

Upstream surface: Keras's TF backend `Variable` (`_value`, `_initialize`,
`_map_aggregation`, `_map_synchronization`, backend/tensorflow/core.py) and
`RNN._create_state_variables` (layers/rnn/rnn.py). Also works around
tensorflow/tensorflow#46488 (BatchNormalization moving statistics drifting
apart across replicas) by giving such variables MEAN aggregation.

Checked on TensorFlow 2.21.0 with Keras 3.15.1; `tests/internals/
test_variables.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import keras
import tensorflow as tf


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
    synchronize: Callable[[keras.Variable], tuple[str, str] | None] = lambda v: None,
) -> int:
    """Re-creates each variable's tf.Variable under `strategy.scope()`.

    `synchronize(variable)` may return `(aggregation, synchronization)` (Keras
    names: "mean", "on_write", "on_read", "only_first_replica") to give the
    relocated variable. Used for state assigned on each replica:
    BatchNormalization's moving statistics get MEAN aggregation, so they are
    averaged across replicas instead of drifting apart
    (tensorflow/tensorflow#46488: the saved file disagrees with what was
    evaluated); a stateful RNN's states are per-replica (ON_READ), each
    replica keeping its own rows' state.

    Returns:
        The number of variables that were relocated.
    """
    moved = 0
    for variable in variables:
        current = variable._value
        if current is None:
            continue  # Not initialized yet: it will be built in scope.
        wanted = synchronize(variable)
        if _lives_in(current, strategy) and (
            wanted is None
            or (variable.aggregation, variable.synchronization) == wanted
        ):
            continue
        if wanted is not None:
            variable._aggregation, variable._synchronization = wanted
        # Read outside the scope: a variable of another strategy can only be
        # read in its own scope or in none. One variable at a time, so the
        # host never holds a second copy of the whole model.
        with tf.init_scope():
            initial = tf.identity(current.read_value())
        with strategy.scope(), tf.init_scope():
            variable._value = tf.Variable(
                initial,
                dtype=variable._dtype,
                trainable=created_trainable(variable),
                name=variable.name,
                aggregation=variable._map_aggregation(variable.aggregation),
                synchronization=variable._map_synchronization(
                    variable.synchronization
                ),
            )
        del initial
        moved += 1
    return moved


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
    return [state for state in tf.nest.flatten(states) if isinstance(state, keras.Variable)]
