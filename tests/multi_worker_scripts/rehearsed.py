# SPDX-License-Identifier: Apache-2.0
"""A script rehearsed on one machine: `simulate_devices(n)` on its first lines.

Run alone or under `parallel-keras launch`, unchanged. Prints one RESULT
line (JSON) with its replicas and final weights.
"""

import parallel_keras

parallel_keras.simulate_devices(2)

import argparse  # noqa: E402
import json  # noqa: E402

import common  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()

x, y = common.data()
template = common.build_template()
parallel = parallel_keras.multi_gpu_model(template, gpus=2)
parallel.compile(optimizer=common.optimizer(), loss="mse")
parallel.fit(x, y, batch_size=common.GLOBAL_BATCH, epochs=args.epochs, shuffle=False, verbose=0)
print(
    "RESULT "
    + json.dumps(
        {
            "replicas": parallel.strategy.num_replicas_in_sync,
            "weights": [w.tolist() for w in template.get_weights()],
        }
    ),
    flush=True,
)
