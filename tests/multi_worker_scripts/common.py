# SPDX-License-Identifier: Apache-2.0
"""Model and data shared by the worker scripts and the tests that check them."""

import os
import signal

import numpy as np

GLOBAL_BATCH = 16
ROWS = 64  # 4 steps per epoch.
LEARNING_RATE = 0.05


def data():
    return data_rows(ROWS)


def data_rows(rows):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32") + 0.1).astype("float32")
    return x, y


def build_template():
    import keras

    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )


def optimizer():
    import keras

    return keras.optimizers.SGD(LEARNING_RATE)


def restart() -> int:
    """How many times the launcher has restarted this worker's group."""
    from parallel_keras.multi_worker import launch as launch_lib

    return int(os.environ.get(launch_lib.RESTART_ENV, "0"))


def kill_mid_epoch(epoch: int, batch: int, worker_index: int):
    """A callback that SIGKILLs this worker at (epoch, batch)."""
    import keras

    class KillMidEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch_now, logs=None):
            self.epoch = epoch_now

        def on_train_batch_begin(self, batch_now, logs=None):
            if (self.epoch, batch_now) == (epoch, batch):
                print(f"KILLING worker {worker_index} pid {os.getpid()}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

    return KillMidEpoch()
