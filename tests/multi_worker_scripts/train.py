# SPDX-License-Identifier: Apache-2.0
"""A legacy-style multi_gpu_model script, run as every worker by the tests.

It is the same script on one machine or many: under `parallel-keras launch`
multi_gpu_model replicates across the workers. It prints one `RESULT` line
(JSON) with its final weights, predictions and metrics.
"""

import argparse
import json
import os

import common
import keras

import parallel_keras
from parallel_keras import _internals, multi_worker

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--kill-worker", type=int, default=None)
parser.add_argument("--kill-epoch", type=int, default=1)
parser.add_argument("--kill-batch", type=int, default=2)
parser.add_argument("--backup", action="store_true")
args = parser.parse_args()

info = multi_worker.worker_info()
restart = common.restart()

x, y = common.data()
template = common.build_template()
parallel = parallel_keras.multi_gpu_model(template, gpus=None)
parallel.compile(optimizer=common.optimizer(), loss="mse", metrics=["mae"])

callbacks = [
    keras.callbacks.ModelCheckpoint(
        parallel_keras.write_path(os.path.join(args.out, "checkpoints", "epoch{epoch}.weights.h5")),
        save_weights_only=True,
    ),
    keras.callbacks.CSVLogger(parallel_keras.write_path(os.path.join(args.out, "log.csv"))),
]
if args.backup:
    callbacks.append(parallel_keras.BackupAndRestore(os.path.join(args.out, "backup")))
if args.kill_worker == info.worker_index and restart == 0:
    callbacks.append(common.kill_mid_epoch(args.kill_epoch, args.kill_batch, info.worker_index))

history = parallel.fit(
    x,
    y,
    batch_size=common.GLOBAL_BATCH,
    epochs=args.epochs,
    shuffle=False,
    verbose=0,
    callbacks=callbacks,
)
evaluation = parallel.evaluate(x, y, batch_size=common.GLOBAL_BATCH, verbose=0)
predictions = parallel.predict(x, batch_size=common.GLOBAL_BATCH, verbose=0)
parallel.save(parallel_keras.write_path(os.path.join(args.out, "model.keras")))
print(
    "RESULT "
    + json.dumps(
        {
            "worker": info.worker_index,
            "chief": multi_worker.is_chief(),
            "replicas": parallel.strategy.num_replicas_in_sync,
            "restart": restart,
            "weights": [w.tolist() for w in template.get_weights()],
            "predictions": predictions.tolist(),
            "loss_history": history.history["loss"],
            "evaluation": evaluation,
            "workaround_active": _internals.scalar_mean_reduction_workaround_active(),
            "keras_reduction_fails": _internals.keras_scalar_mean_reduction_fails(
                parallel.strategy
            ),
        }
    ),
    flush=True,
)
