# SPDX-License-Identifier: Apache-2.0
"""`PARALLEL_KERAS_SIMULATE_DEVICES=N`: an unmodified multi-GPU script on a machine without GPUs.

Each case runs a real script file in a fresh process: the variable must act
before TensorFlow uses its devices, which only a fresh process shows.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from parallel_keras import _simulate_env

pytestmark = pytest.mark.subprocess

# A legacy script after `parallel-keras migrate`: nothing simulates devices.
_SCRIPT = """
{imports}
import numpy as np

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
parallel = multi_gpu_model(model, gpus=2)
parallel.compile(optimizer="sgd", loss="mse")
before = model.get_weights()[0].copy()
x = np.ones((8, 4), "float32")
parallel.fit(x, np.zeros((8, 3), "float32"), batch_size=8, epochs=1, verbose=0)
print("REPLICAS", [name.split("/")[-1] for name in parallel.replica_devices])
print("TRAINED", bool(np.abs(model.get_weights()[0] - before).max() > 0))
"""
_IMPORT_ORDERS = {
    "parallel_keras first": "from parallel_keras import multi_gpu_model\nimport keras",
    "keras first": "import keras\nfrom parallel_keras import multi_gpu_model",
}


def _run_script(tmp_path, imports: str, **env) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(imports=imports)))
    environ = {
        key: value for key, value in os.environ.items() if not key.startswith("PARALLEL_KERAS_")
    }
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("order", list(_IMPORT_ORDERS))
def test_the_variable_gives_an_unmodified_script_its_devices(tmp_path, order):
    process = _run_script(tmp_path, _IMPORT_ORDERS[order], PARALLEL_KERAS_SIMULATE_DEVICES="2")
    assert process.returncode == 0, process.stderr[-3000:]
    assert "REPLICAS ['device:CPU:0', 'device:CPU:1']" in process.stdout
    assert "TRAINED True" in process.stdout


def test_without_the_variable_the_error_names_it(tmp_path):
    process = _run_script(tmp_path, _IMPORT_ORDERS["parallel_keras first"])
    assert process.returncode == 1
    assert "This machine has no GPU" in process.stderr
    assert "PARALLEL_KERAS_SIMULATE_DEVICES=2 python train.py" in process.stderr


def test_a_bad_value_warns_with_the_rule_and_the_script_fails_naming_the_variable(tmp_path):
    process = _run_script(
        tmp_path, _IMPORT_ORDERS["keras first"], PARALLEL_KERAS_SIMULATE_DEVICES="two"
    )
    assert process.returncode == 1
    assert "RuntimeWarning: PARALLEL_KERAS_SIMULATE_DEVICES must be a positive number" in (
        process.stderr
    )
    assert "Received: PARALLEL_KERAS_SIMULATE_DEVICES='two'" in process.stderr
    assert "PARALLEL_KERAS_SIMULATE_DEVICES=n" in process.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    "value, expected", [("", None), ("  ", None), ("1", 1), ("4", 4), (" 2 ", 2)]
)
def test_requested_reads_a_positive_count(value, expected):
    assert _simulate_env.requested({"PARALLEL_KERAS_SIMULATE_DEVICES": value}) == expected
    assert _simulate_env.requested({}) is None


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "all"])
def test_requested_refuses_what_is_not_a_positive_count(value):
    with pytest.raises(ValueError, match=f"Received: PARALLEL_KERAS_SIMULATE_DEVICES='{value}'"):
        _simulate_env.requested({"PARALLEL_KERAS_SIMULATE_DEVICES": value})


def test_a_launch_worker_leaves_its_devices_to_the_launcher(tmp_path):
    # `parallel-keras launch --devices-per-worker` sets this in each worker and
    # decides its devices there; the variable alone must not add any.
    process = _run_script(
        tmp_path,
        _IMPORT_ORDERS["keras first"],
        PARALLEL_KERAS_SIMULATE_DEVICES="2",
        PARALLEL_KERAS_DEVICES_PER_WORKER="3",
    )
    assert process.returncode == 1
    assert "However this machine only has: ['/cpu:0']" in process.stderr
