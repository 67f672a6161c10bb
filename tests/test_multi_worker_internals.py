"""Canaries for the private TensorFlow/Keras behaviour the launcher relies on.

Each fails loudly when an upgrade changes what `parallel_keras._internals`
assumes for multi-worker start-up and resuming (checked on TF 2.21 /
Keras 3.15).
"""

import os
import subprocess
import sys

import keras
import numpy as np

from parallel_keras import _internals

_ARMED_BEFORE_START = """
from parallel_keras import _internals
import keras
seen = []
_internals.run_before_tf_starts(lambda: seen.append(_internals.tf_runtime_initialized()))
assert seen == [], "importing Keras started TensorFlow"
keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
assert seen == [False], seen
assert _internals.tf_runtime_initialized()
print("OK")
"""


def test_callback_runs_just_before_tensorflow_starts():
    """`Context.ensure_initialized` is still where TensorFlow starts."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    process = subprocess.run(
        [sys.executable, "-c", _ARMED_BEFORE_START],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert process.returncode == 0 and "OK" in process.stdout, process.stderr[-3000:]


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
            _internals.set_initial_epoch(self.model, 2)
            _internals.skip_train_steps(self.model, 3)

        def on_train_batch_end(self, batch, logs=None):
            steps.append(int(self.model.optimizer.iterations.numpy()))

    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[Resume()])
    assert history.epoch == [2]
    # Four batches: three only consumed, one trained.
    assert steps == [0, 0, 0, 1]
