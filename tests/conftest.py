# SPDX-License-Identifier: Apache-2.0
"""One TensorFlow start-up per test process, on 4 simulated CPU devices.

TensorFlow runs with its default settings (oneDNN on): no replica is ever
given an empty slice, which oneDNN's Conv2D would mis-shape.
"""

import os
import subprocess

# NumPy 1.26 (what TensorFlow 2.16/2.17 install) runs `lscpu` when
# `numpy.testing` is first imported (numpy/numpy#22982's SVE probe): done
# here, before any test, so no test is taken for one starting a process.
import numpy.testing  # noqa: F401
import pytest

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


def pytest_collection_modifyitems(config, items):
    # A multi-worker group and a notebook kernel are child processes too.
    for item in items:
        if item.get_closest_marker("multiworker") or item.get_closest_marker("notebook"):
            item.add_marker(pytest.mark.subprocess)


@pytest.fixture
def imgaug_warnings_stay_in_the_worker():
    """Re-issues imgaug's own warnings as `UserWarning`s with the same text.

    imgaug 0.4.0 warns with its own `imgaug.imgaug.DeprecationWarning`.
    pytest-xdist's controller rebuilds a worker's warning by importing the
    module of its class, and `imgaug.imgaug` does not import under NumPy 2
    outside `parallel_keras.compat.imgaug`: the worker goes down. Other
    warnings pass through as they are.
    """
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        category = warning.category
        if category.__module__.split(".")[0] == "imgaug":
            category = UserWarning
        warnings.warn_explicit(
            warning.message if category is warning.category else str(warning.message),
            category,
            warning.filename,
            warning.lineno,
        )


@pytest.fixture(autouse=True)
def _child_processes_are_marked(request, monkeypatch):
    """Fails a test that starts a child process without the `subprocess` mark.

    So `pytest -m "not subprocess"` is truly the in-process tier. (Fixtures
    of a wider scope run before this one; their tests carry the mark on
    their module.)
    """
    if request.node.get_closest_marker("subprocess"):
        yield
        return
    started = []
    original = subprocess.Popen.__init__

    def recording_init(self, *args, **kwargs):
        command = args[0] if args else kwargs.get("args")
        started.append(command if isinstance(command, str) else " ".join(map(str, command))[:120])
        original(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_init)
    yield
    if started and os.environ.get("PARALLEL_KERAS_UNMARKED_LOG"):
        # Maintenance mode: list them instead of failing.
        with open(os.environ["PARALLEL_KERAS_UNMARKED_LOG"], "a") as log:
            log.write(f"{request.node.nodeid}\n")
    elif started:
        pytest.fail(
            "This test starts a child process, so it belongs to the subprocess "
            f"tier. Received: {started[0]!r}. Mark it @pytest.mark.subprocess "
            "(or its module: pytestmark = pytest.mark.subprocess).",
            pytrace=False,
        )
