# SPDX-License-Identifier: Apache-2.0
"""The strategy Keras captures when a model or an optimizer is constructed.

Upstream surface: Keras 3 `TensorFlowTrainer.__init__`
(backend/tensorflow/trainer.py, `_distribute_strategy`) and
`TFOptimizer.__init__` (backend/tensorflow/optimizer.py,
`_distribution_strategy`). The same on Keras 3.5.0 to 3.15.1 (read in
3.5.0, 3.8.0, 3.10.0, 3.11.3, 3.15.1). Canaries:
`tests/internals/test_captured_strategy.py`.
"""

from __future__ import annotations

import keras
import tensorflow as tf

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


def set_model_strategy(model: keras.Model, strategy: tf.distribute.Strategy | None) -> None:
    model._distribute_strategy = strategy


def optimizer_strategy(
    optimizer: keras.optimizers.Optimizer,
) -> tf.distribute.Strategy | None:
    return getattr(optimizer, "_distribution_strategy", None)


def set_optimizer_strategy(
    optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy
) -> None:
    optimizer._distribution_strategy = strategy
