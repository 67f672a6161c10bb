# SPDX-License-Identifier: Apache-2.0
"""A worker that stops itself or trains fewer epochs than its peer.

`--stop-worker I`: worker I sends itself SIGSTOP after its first epoch, so
its peer waits in a collective until the collective timeout. `--short-worker
I`: worker I trains one epoch and exits 0 while the others train two.
"""

import argparse
import os
import signal

import common
import keras

import parallel_keras
from parallel_keras import multi_worker

parser = argparse.ArgumentParser()
parser.add_argument("--stop-worker", type=int, default=None)
parser.add_argument("--short-worker", type=int, default=None)
args = parser.parse_args()

index = multi_worker.worker_info().worker_index
x, y = common.data()
parallel = parallel_keras.multi_gpu_model(common.build_template(), gpus=None)
parallel.compile(optimizer=common.optimizer(), loss="mse")


class _StopAfterFirstEpoch(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            print("STOPPING", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)


callbacks = [_StopAfterFirstEpoch()] if args.stop_worker == index else []
epochs = 1 if args.short_worker == index else 3
parallel.fit(
    x,
    y,
    batch_size=common.GLOBAL_BATCH,
    epochs=epochs,
    shuffle=False,
    verbose=0,
    callbacks=callbacks,
)
print("DONE", flush=True)
