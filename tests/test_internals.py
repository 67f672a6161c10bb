"""The private Keras/TF behaviour parallel_keras relies on or works around.

Each test fails loudly when an upgrade changes what `_internals` assumes, or
when an upstream bug it works around is fixed (so the workaround can go).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import _internals, testing


def test_keras_variable_wraps_a_tf_variable_created_by_initialize():
    variable = keras.Variable(np.ones(3, "float32"), trainable=False)
    assert isinstance(variable._value, tf.Variable)
    for attribute in ("_aggregation", "_dtype", "_map_aggregation", "_map_synchronization"):
        assert hasattr(variable, attribute), attribute
    assert variable._map_aggregation("mean") == tf.VariableAggregation.MEAN


def test_relocation_gives_the_variable_a_copy_per_replica():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    variable = keras.Variable(np.arange(3, dtype="float32"), trainable=False)
    mean = lambda v: ("mean", "auto")
    assert _internals.relocate_variables([variable], strategy, mean) == 1
    assert variable.aggregation == "mean"
    assert len(_internals.variable_devices(variable)) == 2
    np.testing.assert_array_equal(variable.numpy(), [0, 1, 2])
    assert _internals.relocate_variables([variable], strategy, mean) == 0


def test_relocated_on_read_variable_keeps_a_value_per_replica():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    variable = keras.Variable(np.zeros(2, "float32"), trainable=False)
    per_replica = lambda v: ("only_first_replica", "on_read")
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


def test_keras_default_steps_and_metric_order_helpers():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    assert _internals.is_keras_default_step(type(model), "train_step")
    assert _internals.flatten_metrics_in_order(model, {"mae": 2.0, "loss": 1.0}) == [1.0, 2.0]
    assert _internals.loss_tracker(model) is not None


def test_trainer_and_optimizer_capture_the_strategy_at_construction():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    outside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    outside_optimizer = keras.optimizers.SGD()
    with strategy.scope():
        inside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        inside_optimizer = keras.optimizers.SGD()
    assert _internals.model_strategy(outside_model) is None
    assert _internals.model_strategy(inside_model) is strategy
    assert _internals.optimizer_strategy(outside_optimizer) is not strategy
    assert _internals.optimizer_strategy(inside_optimizer) is strategy
    for name in ("train_function", "test_function", "predict_function"):
        assert hasattr(inside_model, name)


def test_upstream_symbolic_build_still_fails_on_uneven_batches():
    """Remove SymbolicBuildFromLocalReplica when this starts failing."""
    assert hasattr(keras.Model, "_maybe_symbolic_build")
    assert hasattr(keras.Model, "_symbolic_build")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddN"):
        model.fit(np.ones((16, 2)), np.ones((16, 1)), batch_size=16, verbose=0)


def test_upstream_collective_keys_still_collide_across_strategies():
    """tensorflow/tensorflow#61314; remove collective_all_reduce's fresh keys
    when this starts failing. Runs in its own process: the failure poisons
    the process's collective executor."""
    process = testing.run_python(
        """
        import parallel_keras
        parallel_keras.simulate_devices(4)
        import keras, numpy as np, tensorflow as tf
        x, y = np.ones((16, 2)), np.ones((16, 1))
        for n in (4, 2):
            strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])
            with strategy.scope():
                model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
                model.compile("sgd", "mse")
            try:
                model.fit(x, y, batch_size=8, verbose=0)
                print(n, "ok")
            except Exception as error:
                print(n, type(error).__name__)
        """,
    )
    assert process.stdout.split() == ["4", "ok", "2", "InternalError"]
