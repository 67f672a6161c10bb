# SPDX-License-Identifier: Apache-2.0
"""Adam, backed up every batch, SIGKILLed mid-epoch on its first attempt.

Run under `parallel-keras launch --max-restarts 1` (any number of workers):
the restarted group resumes from the backup and prints one RESULT line
(JSON) with the final weights and where it resumed.
"""

import parallel_keras

parallel_keras.simulate_devices(2)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import common  # noqa: E402
import keras  # noqa: E402

from parallel_keras import multi_worker  # noqa: E402

GLOBAL_BATCH = 12  # Splits evenly over 2, 4 and 6 replicas.
ROWS = 48  # 4 steps per epoch.

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--kill-worker", type=int, default=None)
parser.add_argument("--kill-epoch", type=int, default=1)
parser.add_argument("--kill-batch", type=int, default=2)
args = parser.parse_args()

info = multi_worker.worker_info()
restart = common.restart()


def data():
    x, y = common.data_rows(ROWS)
    return x, y


x, y = data()
template = common.build_template()
parallel = parallel_keras.multi_gpu_model(template, gpus=2)
parallel.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
backup = parallel_keras.BackupAndRestore(os.path.join(args.out, "backup"), save_freq=1)
callbacks = [backup]
if args.kill_worker == info.worker_index and restart == 0:
    callbacks.append(common.kill_mid_epoch(args.kill_epoch, args.kill_batch, info.worker_index))
history = parallel.fit(
    x,
    y,
    batch_size=GLOBAL_BATCH,
    epochs=args.epochs,
    shuffle=False,
    verbose=0,
    callbacks=callbacks,
)
print(
    "RESULT "
    + json.dumps(
        {
            "worker": info.worker_index,
            "workers": info.num_workers,
            "replicas": parallel.strategy.num_replicas_in_sync,
            "restart": restart,
            "restored_from": backup.restored_from,
            "epochs_run": len(history.history["loss"]),
            "weights": [w.tolist() for w in template.get_weights()],
        }
    ),
    flush=True,
)
