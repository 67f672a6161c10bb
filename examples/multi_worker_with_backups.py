# SPDX-License-Identifier: Apache-2.0
"""Multi-worker training that survives a lost worker: launch plus backups.

Run it on this machine with two worker processes (each rehearsing on 2
simulated CPU devices, so 4 replicas in all), restarting the group once if a
worker dies:

    parallel-keras launch --workers 2 --max-restarts 1 \
        examples/multi_worker_with_backups.py --kill-once

`--kill-once` makes worker 1 kill itself in the middle of epoch 2 on the first
attempt, to show the recovery: the launcher restarts the group, and
`BackupAndRestore` resumes from the batch of the last backup, with the
optimizer's state. The final weights are those of an uninterrupted run.

On a real cluster, start one launcher per machine
(`--hosts h1:2222,h2:2222 --index I`) and put `--output-dir` on a filesystem
every worker sees.
"""

import parallel_keras

# Before TensorFlow (or Keras) is imported, or it cannot keep TensorFlow's
# start-up lines out.
parallel_keras.quiet_tensorflow()
# First TensorFlow-related line: under the launcher each worker gets 2
# devices. On machines with GPUs, leave it out.
parallel_keras.simulate_devices(2)

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402

from parallel_keras import multi_worker  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=3, help="Epochs. (default: 3)")
parser.add_argument(
    "--output-dir",
    default=os.path.join(tempfile.gettempdir(), "multi_worker_example"),
    help="Folder every worker can reach: backups and the model. "
    "(default: TMPDIR/multi_worker_example)",
)
parser.add_argument(
    "--kill-once", action="store_true", help="Worker 1 kills itself mid-epoch on the first attempt."
)
args = parser.parse_args()

os.makedirs(args.output_dir, exist_ok=True)
info = multi_worker.worker_info()  # this worker's index, the group size
first_attempt = os.environ.get("PARALLEL_KERAS_RESTART", "0") == "0"

rng = np.random.default_rng(0)
x = rng.normal(size=(96, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1)) + 0.1).astype("float32")

keras.utils.set_random_seed(0)  # every worker builds the same template
template = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
# gpus=None: every local device; with several workers, the strategy spans
# every device of every worker and splits each global batch across them.
parallel = parallel_keras.multi_gpu_model(template, gpus=None)
parallel.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")


class KillOnce(keras.callbacks.Callback):
    """Simulates a lost machine: SIGKILL in the middle of epoch 2."""

    def on_train_batch_end(self, batch, logs=None):
        if self._epoch == 1 and batch == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch


# Backed up after every batch; removed when `fit` completes.
backup_dir = os.path.join(args.output_dir, "backup")
callbacks = [parallel_keras.BackupAndRestore(backup_dir, save_freq=1)]
if args.kill_once and first_attempt and info.worker_index == 1:
    callbacks.append(KillOnce())

# The global batch (24) is split across all replicas of all workers.
history = parallel.fit(
    x, y, batch_size=24, epochs=args.epochs, shuffle=False, callbacks=callbacks, verbose=0
)

# Only the chief writes to the real path; the others write to a temporary
# folder that is removed at the end (parallel_keras.write_path).
model_path = parallel_keras.write_path(os.path.join(args.output_dir, "model.keras"))
parallel.save(model_path)
print(
    f"worker {info.worker_index} of {info.num_workers}: "
    f"{parallel.strategy.num_replicas_in_sync} replicas, "
    f"final loss {history.history['loss'][-1]:.5f}"
)
