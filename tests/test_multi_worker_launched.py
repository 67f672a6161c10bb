# SPDX-License-Identifier: Apache-2.0
"""A script rehearsed on one machine runs unchanged under `parallel-keras launch`.

`multi_worker_scripts/rehearsed.py` calls `simulate_devices(2)` on its first
lines; under the launcher each worker gets those 2 devices.
"""

import os
import sys

import numpy as np
import pytest

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
sys.path.insert(0, SCRIPTS)

import common  # noqa: E402
import helpers  # noqa: E402

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess


def results(stdout):
    return helpers.worker_records(stdout, "RESULT")


def describe(process):
    return f"exit {process.returncode}\n{process.stdout[-3000:]}\n{process.stderr[-3000:]}"


def test_rehearsed_script_runs_unchanged_with_its_simulated_devices():
    process = helpers.run_launch("--workers", "2", os.path.join(SCRIPTS, "rehearsed.py"))
    assert process.returncode == 0, describe(process)
    found = results(process.stdout)
    assert sorted(found) == [0, 1], describe(process)
    import keras

    x, y = common.data()
    reference = common.build_template()
    reference.compile(optimizer=common.optimizer(), loss="mse")
    reference.fit(x, y, batch_size=common.GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
    for worker in found.values():
        assert worker["replicas"] == 4  # 2 workers x simulate_devices(2).
        for got, want in zip(worker["weights"], reference.get_weights()):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)
    del keras


@pytest.mark.parametrize(
    "script, launch_args, expected",
    [
        (
            "rehearsed.py",
            ["--devices-per-worker", "3"],
            [
                "must agree",
                "simulate_devices(2)",
                "--devices-per-worker 3",
                "pass --devices-per-worker 2",
            ],
        ),
        (
            "late_simulate.py",
            [],
            [
                "must run before the script touches TensorFlow",
                "Received: simulate_devices(2) after TensorFlow had started",
                "Move `parallel_keras.simulate_devices(2)`",
            ],
        ),
    ],
    ids=["devices-disagree", "tensorflow-touched-first"],
)
def test_script_and_launcher_disagreeing_on_devices_is_explained(script, launch_args, expected):
    process = helpers.run_launch(
        "--workers",
        "2",
        "--startup-timeout",
        "60",
        *launch_args,
        os.path.join(SCRIPTS, script),
    )
    assert process.returncode != 0, describe(process)
    for fragment in expected:
        assert fragment in process.stdout, describe(process)
