"""One TensorFlow start-up per test process, on 4 simulated CPU devices.

TensorFlow runs with its default settings (oneDNN on): no replica is ever
given an empty slice, which oneDNN's Conv2D would mis-shape.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import parallel_keras  # noqa: E402

NUM_SIMULATED_DEVICES = 4
parallel_keras.simulate_devices(NUM_SIMULATED_DEVICES)


# Test tiers. `pytest tests` runs them all; `pytest -m "not slow"` is the
# fast tier a contributor runs while working (CONTRIBUTING.md).
_MARKERS = {
    "slow": "takes more than a few seconds (whole scripts, notebooks, benchmarks)",
    "subprocess": "starts Python (often TensorFlow) in child processes",
    "multiworker": "starts a multi-worker group of real processes on loopback",
    "notebook": "executes a Jupyter notebook headless",
}


def pytest_configure(config):
    for name, meaning in _MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")
