# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.compiled_functions` (Keras 3.5 to 3.15).

They fail loudly when an upgrade changes which steps a model inherits or how
`fit` starts an epoch and calls its train function.
"""

import keras
import numpy as np
from keras.src.backend.tensorflow import trainer as keras_tf_trainer

from parallel_keras._internals import compiled_functions


def test_is_keras_default_step_sees_an_override():
    """`TensorFlowTrainer.train_step` & co. are still what a model inherits."""
    for name in ("train_step", "test_step", "predict_step"):
        assert callable(getattr(keras_tf_trainer.TensorFlowTrainer, name)), name
        assert compiled_functions.is_keras_default_step(keras.Model, name), name

    class CustomStep(keras.Model):
        def train_step(self, data):
            return {}

    assert not compiled_functions.is_keras_default_step(CustomStep, "train_step")
    assert compiled_functions.is_keras_default_step(CustomStep, "test_step")


def test_fit_reads_initial_epoch_and_calls_train_function_per_step():
    """Keras `fit` starts at `model._initial_epoch` and calls
    `model.train_function(iterator)` once per step (`skip_train_steps`)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    assert hasattr(model, "_initial_epoch")
    x = np.ones((8, 2), "float32")
    y = np.ones((8, 1), "float32")
    steps = []

    class Resume(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            compiled_functions.set_initial_epoch(self.model, 2)
            compiled_functions.skip_train_steps(self.model, 3)

        def on_train_batch_end(self, batch, logs=None):
            steps.append(int(self.model.optimizer.iterations.numpy()))

    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[Resume()])
    assert history.epoch == [2]
    # Four batches: three only consumed, one trained.
    assert steps == [0, 0, 0, 1]
