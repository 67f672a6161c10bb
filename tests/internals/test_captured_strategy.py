# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.captured_strategy` (Keras 3.5 to 3.15)."""

import keras
import tensorflow as tf

from parallel_keras._internals import captured_strategy


def test_trainer_and_optimizer_capture_the_strategy_at_construction():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    outside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    outside_optimizer = keras.optimizers.SGD()
    with strategy.scope():
        inside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        inside_optimizer = keras.optimizers.SGD()
    assert captured_strategy.model_strategy(outside_model) is None
    assert captured_strategy.model_strategy(inside_model) is strategy
    assert captured_strategy.optimizer_strategy(outside_optimizer) is not strategy
    assert captured_strategy.optimizer_strategy(inside_optimizer) is strategy
    for name in ("train_function", "test_function", "predict_function"):
        assert hasattr(inside_model, name)
