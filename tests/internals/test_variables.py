# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.variables` (Keras 3.5 to 3.15).

Each fails loudly when an upgrade changes how Keras wraps a tf.Variable or
where a stateful RNN keeps its states.
"""

import inspect
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import variables


def _keras_version() -> tuple[int, int]:
    return tuple(int(part) for part in re.findall(r"\d+", keras.__version__)[:2])


def _variable_devices(variable: keras.Variable) -> list[str]:
    """Devices holding a copy of a Keras variable (one per replica)."""
    value = _internals.keras_variable_value(variable)
    if hasattr(value, "values"):
        return [component.device for component in value.values]
    return [value.device]


def test_every_keras_variable_is_an_instance_of_the_backend_class():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    assert all(_internals.is_keras_variable(weight) for weight in layer.weights)
    assert not _internals.is_keras_variable(tf.Variable(1.0))
    # Keras 3.5-3.7's public `keras.Variable` is an export class, not the base.
    assert isinstance(layer.kernel, keras.Variable) == (_keras_version() >= (3, 8))


def test_keras_variable_wraps_a_tf_variable_created_by_initialize():
    variable = keras.Variable(np.ones(3, "float32"), trainable=False)
    assert isinstance(variable._value, tf.Variable)
    for attribute in ("_aggregation", "_dtype", "aggregation"):
        assert hasattr(variable, attribute), attribute


def test_the_initialize_shape_is_the_one_this_keras_has():
    version = _keras_version()
    shape = variables._initialize_shape()
    assert shape.passes_aggregation == (version >= (3, 7)), shape
    assert shape.passes_synchronization == (version >= (3, 10)), shape
    # What `_initialize` passes is what the shape says.
    source = inspect.getsource(variables._backend_variable_class()._initialize)
    assert ("aggregation=" in source) == shape.passes_aggregation
    assert ("synchronization=" in source) == shape.passes_synchronization


def test_relocation_keeps_what_keras_gives_a_native_variable():
    """A variable relocated without a wish matches one Keras builds in scope."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        native = keras.Variable(np.ones(2, "float32"), trainable=True)
    relocated = keras.Variable(np.ones(2, "float32"), trainable=True)
    assert _internals.relocate_variables([relocated], strategy) == 1
    for attribute in ("aggregation", "synchronization", "trainable", "dtype"):
        assert getattr(relocated.value, attribute) == getattr(native.value, attribute), attribute


def test_replica_aggregation_is_what_the_tf_variable_does():
    """A layer's weight: Keras 3.5-3.6 say "mean" but never pass it on
    (TensorFlow's NONE); Keras 3.7 pass their default "mean" on; 3.8+ say
    and pass "none". Gradient accumulation reads what the replicas see."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        layer = keras.layers.Dense(1)
        layer.build((None, 2))
        total = keras.Variable(0.0, trainable=False, aggregation="sum")
    passes = variables.initialize_passes_aggregation()
    assert layer.kernel.aggregation == ("none" if _keras_version() >= (3, 8) else "mean")
    expected_kernel = layer.kernel.aggregation if passes else "none"
    assert _internals.replica_aggregation(layer.kernel) == expected_kernel
    assert (
        layer.kernel.value.aggregation
        == {
            "none": tf.VariableAggregation.NONE,
            "mean": tf.VariableAggregation.MEAN,
        }[expected_kernel]
    )
    # A "sum" variable: passed on from 3.7; before, it became NONE.
    assert _internals.replica_aggregation(total) == ("sum" if passes else "none")
    # Relocated by parallel_keras, a "sum" counter is SUM on every Keras.
    relocated = keras.Variable(0.0, trainable=False, aggregation="sum")
    assert _internals.relocate_variables([relocated], strategy) == 1
    assert _internals.replica_aggregation(relocated) == "sum"


def test_metric_counters_count_each_row_once_where_keras_or_relocation_makes_them_per_replica():
    """Keras 3.10+ creates a metric's "sum" counters ON_READ; 3.7-3.9 ON_WRITE
    SUM (each replica's `assign(self + value)` summed: the old total counted
    once per replica); 3.5-3.6 NONE. Relocated where Keras does not, a Mean
    updated on 2 replicas over 2 steps counts each row once."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        metric = keras.metrics.Mean()
    on_read = metric.total.value.synchronization == tf.VariableSynchronization.ON_READ
    assert on_read == (_keras_version() >= (3, 10))
    assert variables.creates_metric_counters_per_replica() == on_read
    if not on_read:
        assert _internals.relocate_variables(metric.variables, strategy) == 2

    @tf.function
    def update(step):
        def fn():
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group
            metric.update_state(tf.cast(step * 2 + replica, tf.float32))

        strategy.run(fn)

    for step in range(2):
        update(tf.constant(step))
    assert float(metric.count.numpy()) == 4.0
    assert float(metric.result().numpy()) == 1.5  # mean of 0, 1, 2, 3


def test_relocation_gives_the_variable_a_copy_per_replica():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    variable = keras.Variable(np.arange(3, dtype="float32"), trainable=False)

    def mean(variable):
        return ("mean", "auto")

    assert _internals.relocate_variables([variable], strategy, mean) == 1
    assert variable.aggregation == "mean"
    assert len(_variable_devices(variable)) == 2
    np.testing.assert_array_equal(variable.numpy(), [0, 1, 2])
    assert _internals.relocate_variables([variable], strategy, mean) == 0


def test_relocated_on_read_variable_keeps_a_value_per_replica():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    variable = keras.Variable(np.zeros(2, "float32"), trainable=False)

    def per_replica(variable):
        return ("only_first_replica", "on_read")

    assert _internals.relocate_variables([variable], strategy, per_replica) == 1

    @tf.function
    def assign_replica_id():
        def fn():
            context = tf.distribute.get_replica_context()
            variable.assign(tf.fill([2], tf.cast(context.replica_id_in_sync_group, tf.float32)))

        strategy.run(fn)

    assign_replica_id()
    local = [v.numpy() for v in variable.value.values]
    np.testing.assert_array_equal(local, [[0, 0], [1, 1]])
    variable.assign(np.full(2, 5.0, "float32"))  # outside replicas: every copy
    np.testing.assert_array_equal([v.numpy() for v in variable.value.values], [[5, 5], [5, 5]])


def test_stateful_rnn_states_are_outside_model_variables():
    inputs = keras.Input(batch_shape=(2, 3, 1))
    layer = keras.layers.SimpleRNN(2, stateful=True)
    model = keras.Model(inputs, layer(inputs))
    states = _internals.rnn_state_variables(layer)
    assert len(states) == 1 and tuple(states[0].shape) == (2, 2)
    assert all(state is not variable for state in states for variable in model.variables)


def test_freezing_a_layer_leaves_its_tf_variables_trainable_and_relocation_keeps_that():
    # Keras 3.15 sets Variable.trainable on freezing; the tf.Variable keeps
    # its creation flag, which GradientTape watches (`created_trainable`).
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    layer.trainable = False
    assert not layer.kernel.trainable
    assert _internals.keras_variable_value(layer.kernel).trainable
    assert _internals.created_trainable(layer.kernel)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _internals.relocate_variables(layer.variables, strategy, lambda v: ("mean", "auto"))
    assert _internals.keras_variable_value(layer.kernel).trainable
    moving = keras.layers.BatchNormalization()
    moving.build((None, 3))
    assert not _internals.created_trainable(moving.moving_mean)


def test_metric_counters_count_each_replica_update_once_after_relocation():
    """A metric's "sum" counters updated on the replicas. Keras 3.10+ create
    them per replica (ON_READ); Keras 3.7-3.9 on-write, where Keras's
    `assign_add` (`assign(self + value)`) adds the old total once per
    replica; Keras 3.5-3.6 unaggregated. Relocated, every shape counts each
    update once (what `symbolic_build_from_local_replica` does below 3.10)."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        total = keras.metrics.Sum()
    native = _internals.keras_variable_value(total.total)
    if variables.creates_metric_counters_per_replica():  # Keras 3.10+.
        assert native.synchronization == tf.VariableSynchronization.ON_READ
    elif variables.initialize_passes_aggregation():  # Keras 3.7-3.9.
        assert native.aggregation == tf.VariableAggregation.SUM
        assert native.synchronization != tf.VariableSynchronization.ON_READ
        assert "self.assign(self + value)" in inspect.getsource(keras.Variable.assign_add)
    else:  # Keras 3.5-3.6.
        assert native.aggregation == tf.VariableAggregation.NONE
    _internals.relocate_variables(total.variables, strategy)
    relocated = _internals.keras_variable_value(total.total)
    assert relocated.synchronization == tf.VariableSynchronization.ON_READ

    @tf.function
    def update():
        strategy.run(lambda: total.update_state(1.0))

    for _ in range(3):
        update()
    assert float(total.result()) == 6.0  # 3 updates of 1.0 on 2 replicas


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
        lambda: tf.distribute.experimental.CentralStorageStrategy(["/cpu:0", "/cpu:1"]),
    ],
    ids=["mirrored", "central_storage"],
)
def test_a_relocated_scalar_converts_to_python_numbers(strategy):
    # TF 2.21's DistributedVariable and AggregatingVariable define no
    # __float__/__int__; Keras's Variable converts through them.
    learning_rate = keras.Variable(0.25, dtype="float32")
    step = keras.Variable(7, dtype="int64")
    _internals.relocate_variables([learning_rate, step], strategy())
    assert float(learning_rate) == 0.25
    assert int(step) == 7
    # Added, and listed with what parallel_keras installed.
    targets = {entry.target: entry for entry in _internals.interceptions.installed()}
    for target in (
        "tensorflow.python.distribute.values.DistributedVariable.__float__",
        "tensorflow.python.distribute.ps_values.AggregatingVariable.__int__",
    ):
        assert targets[target].change == "added"
        assert targets[target].by == "parallel_keras._internals.variables"
