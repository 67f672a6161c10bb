# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by several test modules (not fixtures: those live in conftest.py).

Test modules import these instead of importing one another.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import queue
import re
import resource
import signal
import subprocess
import sys
import threading
from typing import Any

import keras
import numpy as np
import pytest

from parallel_keras._environment import keras_requirement
from parallel_keras.testing import legacy_files, run_python


def one_device_on_batch(model: keras.Model, method: str, x, y=None, sample_weight=None, **kwargs):
    """One device's `train_on_batch`/`test_on_batch` logs: the batch's own.

    What Keras 2 and Keras 3.15 return, and what a parallel model returns on
    every Keras. Keras 3.5 to 3.11 (before keras-team/keras#22617) average
    over every batch since the metrics were last reset, a `fit` included, so
    the metrics are reset first. `test_on_batch` is one batch's `evaluate`:
    on Keras 3.5 a multi-output model's first `test_on_batch` raises
    StopIteration.
    """
    model.reset_metrics()
    if method == "test_on_batch":
        rows = len(next(iter(keras.tree.flatten(x))))
        return model.evaluate(
            x, y, sample_weight=sample_weight, batch_size=rows, verbose=0, **kwargs
        )
    return getattr(model, method)(x, y, sample_weight, **kwargs)


def _keras_major_minor() -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", keras.__version__)[:2])


def keras_has_multi_step_at_data_end() -> bool:
    """Whether this Keras's `steps_per_execution` loop stops at the end of an
    epoch's data (Keras 3.7+); below, parallel_keras refuses an epoch whose
    batches are not a multiple of it."""
    return _keras_major_minor() >= (3, 7)


def assert_multi_step_error(message: str, steps: int, batches: int) -> None:
    """`message` is the refusal of several steps per execution on this Keras."""
    for part in (
        "Keras 3.7 or newer",
        f"keras=={keras.__version__}",
        f"steps_per_execution={steps}, {batches} batches per epoch",
        f"pip install {keras_requirement((3, 7))}",
    ):
        assert part in message, message


def keras_has_placement() -> bool:
    """Whether this Keras can place layer calls (Keras 3.11+).

    Below 3.11 device placement is refused at first use with
    `PlacementNeedsNewerKeras`, which
    tests/internals/test_placement.py::test_placement_is_refused_below_keras_3_11
    asserts.
    """
    return _keras_major_minor() >= (3, 11)


def skip_module_without_placement() -> None:
    """Skips a device-placement test module on a Keras below 3.11 (before it
    imports or uses placement, which raises there)."""
    if not keras_has_placement():
        pytest.skip(
            f"Keras {keras.__version__} has no device placement (3.11+); "
            "tests/internals/test_placement.py::test_placement_is_refused_below_keras_3_11 "
            "covers the error it raises",
            allow_module_level=True,
        )


# `parallel-keras launch` as a subprocess's argv prefix; the CLI imports only
# its launch subcommand.
LAUNCH = [
    sys.executable,
    "-c",
    "from parallel_keras.cli import main; "
    "main.SUBCOMMANDS = {'launch': 'parallel_keras.cli.launch'}; main.run()",
    "launch",
]


def run_launch(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`parallel-keras launch ARGS` in a subprocess, its output captured."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [*LAUNCH, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def worker_records(output: str, tag: str) -> dict[int, Any]:
    """`{worker: value}` from the launcher's `[worker N] TAG <json>` lines."""
    return {
        int(match.group(1)): json.loads(match.group(2))
        for match in re.finditer(rf"^\[worker (\d+)\] {tag} (.*)$", output, re.M)
    }


TEMPLATES_SOURCE = "\n".join(inspect.getsource(build) for build in legacy_files.TEMPLATES.values())
# The rows the saving and callback tests predict on.
ROWS = np.random.default_rng(7).normal(size=(12, 6)).astype("float32")


def targets(name, rows=ROWS):
    """Regression targets for the legacy_files template `name`."""
    rng = np.random.default_rng(3)
    if name == "two_output":
        return (
            rng.normal(size=(len(rows), 2)).astype("float32"),
            rng.normal(size=(len(rows), 1)).astype("float32"),
        )
    return rng.normal(size=(len(rows), 3)).astype("float32")


def flat(predictions):
    """Predictions (one array or a structure of them) as a list of lists."""
    return [np.asarray(p).tolist() for p in keras.tree.flatten(predictions)]


def load_in_fresh_process(files: dict[str, tuple[str, str]], rows=ROWS) -> dict[str, list]:
    """{key: (template name, path)} -> predictions of each file, plain keras."""
    code = (
        TEMPLATES_SOURCE
        + f"""
import json, keras, numpy as np
rows = np.array({np.asarray(rows).tolist()!r}, dtype="float32")
files = {files!r}
out = {{}}
for key, (name, path) in files.items():
    if path.endswith(".weights.h5") or key.endswith("weights_h5"):
        model = globals()[name + "_template"]()
        model.load_weights(path)
    else:
        model = keras.models.load_model(path, compile=False)
    out[key] = [np.asarray(p).tolist() for p in keras.tree.flatten(model.predict(rows, verbose=0))]
print("JSON" + json.dumps(out))
"""
    )
    process = run_python(code, env={"CUDA_VISIBLE_DEVICES": ""})
    line = next(out for out in process.stdout.splitlines() if out.startswith("JSON"))
    return json.loads(line[4:])


def legacy_source(name):
    """A legacy_files template with distinct values in every weight."""
    model = legacy_files.TEMPLATES[name]()
    rng = np.random.default_rng(11)
    for variable in model.weights:
        value = rng.normal(size=variable.shape)
        if "variance" in variable.name:
            value = np.abs(value) + 0.5
        variable.assign(value.astype("float32"))
    return model


def predict(model, rows):
    """Inference predictions of `model` on `rows`, flattened to arrays."""
    return [np.asarray(p) for p in keras.tree.flatten(model(rows, training=False))]


def wait_for_line(process, text, timeout):
    """Reads `process.stdout` until a line contains `text`.

    Returns (found, output so far). Not found when the process exits first
    or `timeout` seconds pass (a hang guard, not a speed limit).
    """
    lines: queue.Queue = queue.Queue()

    def read():
        for line in process.stdout:
            lines.put(line)
            if text in line:
                return
        lines.put(None)  # End of output: the process exited.

    threading.Thread(target=read, daemon=True).start()
    output = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            return False, "".join(output)
        if line is None:
            return False, "".join(output)
        output.append(line)
        if text in line:
            return True, "".join(output)


# --- The data-parallel tests' reference model -------------------------------


def conv_bn_model(synchronized=False, seed=1):
    """Dense, Conv2D and BatchNormalization: the issue's reference model."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(8, 3, use_bias=False)(inputs)
    x = keras.layers.BatchNormalization(synchronized=synchronized)(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(6, activation="relu")(x)
    outputs = keras.layers.Dense(3)(x)
    return keras.Model(inputs, outputs, name="conv_bn")


def images(rows=64, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(rows, 8, 8, 3).astype("float32"), rng.rand(rows, 3).astype("float32")


@contextlib.contextmanager
def file_size_limit(size: int):
    """Files of this process cannot grow past `size` bytes (EFBIG, no signal).

    `RLIMIT_FSIZE` stands in for a full disk where mounting a small tmpfs
    is not allowed: a write fails with an OSError as it would on ENOSPC.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
