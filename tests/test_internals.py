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
    assert _internals.relocate_variables([variable], strategy, lambda v: True) == 1
    assert variable.aggregation == "mean"
    assert len(_internals.variable_devices(variable)) == 2
    np.testing.assert_array_equal(variable.numpy(), [0, 1, 2])
    assert _internals.relocate_variables([variable], strategy, lambda v: True) == 0


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
        env={"TF_ENABLE_ONEDNN_OPTS": "0"},
    )
    assert process.stdout.split() == ["4", "ok", "2", "InternalError"]
