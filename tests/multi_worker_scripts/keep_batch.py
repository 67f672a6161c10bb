# SPDX-License-Identifier: Apache-2.0
"""The global batch kept on any number of replicas, by accumulating gradients.

Written for GLOBAL_BATCH rows per update with --per-replica rows on each
replica: `keep_global_batch` gives the `fit` batch size and the optimizer's
`gradient_accumulation_steps` for the replicas this run has (2 workers x 2
devices, or the survivors of `launch --min-workers`). With --kill-worker the
worker is SIGKILLed mid-epoch on the first attempt and the group resumes from
its backup. Prints one RESULT line (JSON) per worker.
"""

import parallel_keras

parallel_keras.simulate_devices(2)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import common  # noqa: E402
import keras  # noqa: E402

from parallel_keras import multi_worker  # noqa: E402

GLOBAL_BATCH = 16  # common.ROWS = 64: 4 updates per epoch.

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--per-replica", type=int, default=4)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--kill-worker", type=int, default=None)
parser.add_argument("--kill-epoch", type=int, default=1)
parser.add_argument("--kill-batch", type=int, default=2)
args = parser.parse_args()

info = multi_worker.worker_info()
restart = common.restart()
x, y = common.data()
template = common.build_template()
parallel = parallel_keras.multi_gpu_model(template, gpus=None)
batch_size, steps = parallel_keras.keep_global_batch(GLOBAL_BATCH, args.per_replica, parallel)
parallel.compile(
    optimizer=keras.optimizers.Adam(0.01, gradient_accumulation_steps=steps), loss="mse"
)
backup = parallel_keras.BackupAndRestore(os.path.join(args.out, "backup"), save_freq=steps or 1)
callbacks = [backup]
if args.kill_worker == info.worker_index and restart == 0:
    callbacks.append(common.kill_mid_epoch(args.kill_epoch, args.kill_batch, info.worker_index))
parallel.fit(
    x, y, batch_size=batch_size, epochs=args.epochs, shuffle=False, verbose=0, callbacks=callbacks
)
print(
    "RESULT "
    + json.dumps(
        {
            "worker": info.worker_index,
            "workers": info.num_workers,
            "replicas": parallel.strategy.num_replicas_in_sync,
            "batch_size": batch_size,
            "steps": steps,
            "restart": restart,
            "restored_from": backup.restored_from,
            "iterations": int(parallel.optimizer.iterations.numpy()),
            "weights": [w.tolist() for w in template.get_weights()],
        }
    ),
    flush=True,
)
