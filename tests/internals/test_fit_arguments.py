# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.fit_arguments` (Keras 3.15)."""

import inspect

import keras
import numpy as np
from keras.src.backend.tensorflow import trainer as keras_tf_trainer

from parallel_keras._internals import fit_arguments


def test_keras_fit_makes_its_callback_list_after_the_locals_it_reads():
    """Keras's TF `fit` sets every local `fit_arguments` reads before its
    `CallbackList`, so a callback's `set_params` sees them."""
    source = inspect.getsource(keras_tf_trainer.TensorFlowTrainer.fit)
    made = source.index("CallbackList(")
    for name in fit_arguments.FIT_LOCALS:
        assert name in inspect.signature(keras_tf_trainer.TensorFlowTrainer.fit).parameters
    assert source.index("validation_split=validation_split") < made  # sliced off first


def test_a_callback_sees_its_fit_calls_batch_size_data_and_validation():
    seen = []

    class Probe(keras.callbacks.Callback):
        def set_params(self, params):
            super().set_params(params)
            seen.append(fit_arguments.fit_arguments(self.model))

    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse")
    x, y = np.ones((10, 2), "float32"), np.ones((10, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, validation_split=0.2, callbacks=[Probe()])
    (found,) = seen
    assert found["batch_size"] == 4 and found["steps_per_epoch"] is None
    assert len(found["x"]) == 8 and found["validation_data"] is not None
    assert fit_arguments.fit_arguments(model) is None
