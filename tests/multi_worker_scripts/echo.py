# SPDX-License-Identifier: Apache-2.0
"""A worker that trains nothing: reports where it runs, then exits or waits."""

import argparse
import json
import sys
import time

from parallel_keras import multi_worker

parser = argparse.ArgumentParser()
parser.add_argument("--fail-worker", type=int, default=None)
parser.add_argument("--code", type=int, default=3)
parser.add_argument("--sleep", type=float, default=0.0)
args, rest = parser.parse_known_args()

info = multi_worker.worker_info()
print("ECHO " + json.dumps({"worker": info.worker_index, "argv": sys.argv[1:]}), flush=True)
if info.worker_index == args.fail_worker:
    sys.exit(args.code)
time.sleep(args.sleep)
