"""One TensorFlow start-up per test process, on 4 simulated CPU devices.

The environment must be set before TensorFlow is imported:
* TF_ENABLE_ONEDNN_OPTS=0: oneDNN's Conv2D returns the input's shape for an
  empty batch (checked on TF 2.21), and a replica receives an empty batch
  whenever a batch has fewer rows than there are replicas.
"""

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import parallel_keras  # noqa: E402

NUM_SIMULATED_DEVICES = 4
parallel_keras.simulate_devices(NUM_SIMULATED_DEVICES)
