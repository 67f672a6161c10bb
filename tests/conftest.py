"""One TensorFlow start-up per test process, on 4 simulated CPU devices.

TensorFlow runs with its default settings (oneDNN on): no replica is ever
given an empty slice, which oneDNN's Conv2D would mis-shape.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import parallel_keras  # noqa: E402

NUM_SIMULATED_DEVICES = 4
parallel_keras.simulate_devices(NUM_SIMULATED_DEVICES)
