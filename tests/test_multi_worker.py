# SPDX-License-Identifier: Apache-2.0
"""Multi-worker training with real worker processes on loopback.

Each test starts `parallel-keras launch` on `multi_worker_scripts/train.py`,
a legacy-style multi_gpu_model script, and compares what the workers report
with this process training the same template on one device, with the same
data and global batch.
"""

import os
import re
import socket
import subprocess
import sys

import keras
import numpy as np
import psutil
import pytest

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
sys.path.insert(0, SCRIPTS)

import common  # noqa: E402
import helpers  # noqa: E402

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess


def launch(tmp_path, *launch_args, script_args=(), timeout=240):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    worker_tmp = tmp_path / "worker_tmp"
    worker_tmp.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        TF_CPP_MIN_LOG_LEVEL="2",
        TMPDIR=str(worker_tmp),  # Where non-chief workers' temp folders go.
    )
    process = subprocess.run(
        [
            *helpers.LAUNCH,
            *launch_args,
            os.path.join(SCRIPTS, "train.py"),
            "--out",
            str(out),
            *script_args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    process.out = out
    process.worker_tmp = worker_tmp
    return process


def results(process):
    return helpers.worker_records(process.stdout, "RESULT")


def reference(epochs):
    """The same template trained in one process on one device."""
    x, y = common.data()
    template = common.build_template()
    template.compile(optimizer=common.optimizer(), loss="mse", metrics=["mae"])
    template.fit(x, y, batch_size=common.GLOBAL_BATCH, epochs=epochs, shuffle=False, verbose=0)
    return template.get_weights(), template.predict(x, verbose=0)


def assert_nothing_left(process):
    """No worker process alive and every worker port free again."""
    out = str(process.out)
    alive = [
        p.pid for p in psutil.process_iter(["cmdline"]) if out in " ".join(p.info["cmdline"] or [])
    ]
    assert not alive, f"worker processes left behind: {alive}"
    addresses = re.search(r"workers: ([\d.:,]+)\)", process.stdout + process.stderr)
    assert addresses, process.stdout[-2000:] + process.stderr[-2000:]
    for address in addresses.group(1).split(","):
        host, port = address.rsplit(":", 1)
        with socket.socket() as sock:
            # Connections in TIME_WAIT may remain; a listener may not, and
            # binding with SO_REUSEADDR fails on Linux while one exists.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, int(port)))
    # Ours only: TensorFlow's autograph writes `__autograph_generated_file*`
    # sources into TMPDIR, which a SIGKILLed worker cannot remove.
    ours = [name for name in os.listdir(process.worker_tmp) if name.startswith("parallel_keras_")]
    assert ours == [], "worker temp folders left behind"


def describe(process):
    return f"exit {process.returncode}\n{process.stdout[-3000:]}\n{process.stderr[-3000:]}"


@pytest.mark.parametrize("devices_per_worker", [1, 2])
def test_workers_train_like_one_device_and_only_chief_writes(tmp_path, devices_per_worker):
    process = launch(tmp_path, "--workers", "2", "--devices-per-worker", str(devices_per_worker))
    assert process.returncode == 0, describe(process)
    found = results(process)
    assert sorted(found) == [0, 1], describe(process)
    expected_weights, expected_predictions = reference(epochs=2)
    for worker in found.values():
        assert worker["replicas"] == 2 * devices_per_worker
        assert worker["chief"] == (worker["worker"] == 0)
        for got, want in zip(worker["weights"], expected_weights):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)
        # predict: every row, in input order, on every worker.
        np.testing.assert_allclose(np.array(worker["predictions"]), expected_predictions, atol=1e-5)
    for got, want in zip(found[0]["weights"], found[1]["weights"]):
        np.testing.assert_array_equal(np.array(got), np.array(want))
    assert found[0]["evaluation"] == found[1]["evaluation"]

    written = sorted(
        os.path.relpath(os.path.join(root, name), process.out)
        for root, _, names in os.walk(process.out)
        for name in names
    )
    assert written == [
        "checkpoints/epoch1.weights.h5",
        "checkpoints/epoch2.weights.h5",
        "log.csv",
        "model.keras",
    ]
    saved = keras.saving.load_model(process.out / "model.keras")
    for got, want in zip(saved.get_weights(), expected_weights):
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert_nothing_left(process)


def test_keras_still_needs_the_scalar_metric_workaround(tmp_path):
    """Fails once Keras reduces 0-d metrics under multi-worker MWMS itself.

    keras-team/keras#20585: then the workaround in parallel_keras._internals
    no longer installs (it probes first) and can be deleted.
    """
    process = launch(tmp_path, "--workers", "2", script_args=["--epochs", "1"])
    assert process.returncode == 0, describe(process)
    found = results(process)
    for worker in found.values():
        assert worker["keras_reduction_fails"], (
            "Keras now reduces scalar metrics under MultiWorkerMirroredStrategy: "
            "remove the scalar-mean workaround from parallel_keras/_internals/multi_worker.py."
        )
        assert worker["workaround_active"]
    assert_nothing_left(process)


def test_killed_worker_restarts_group_and_resumes_from_backup(tmp_path):
    epochs = 3
    process = launch(
        tmp_path,
        "--workers",
        "2",
        "--max-restarts",
        "1",
        script_args=[
            "--epochs",
            str(epochs),
            "--backup",
            "--kill-worker",
            "1",
            "--kill-epoch",
            "1",
            "--kill-batch",
            "2",
        ],
    )
    assert process.returncode == 0, describe(process)
    assert "KILLING worker 1" in process.stdout
    assert re.search(r"worker 1 \(pid \d+\) was killed by SIGKILL", process.stderr)
    found = results(process)
    assert sorted(found) == [0, 1], describe(process)
    expected_weights, _ = reference(epochs=epochs)
    for worker in found.values():
        assert worker["restart"] == 1
        # Epoch 0 was backed up before the kill: the new group runs 1 and 2.
        assert len(worker["loss_history"]) == epochs - 1
        for got, want in zip(worker["weights"], expected_weights):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)
    assert not (process.out / "backup").exists()  # Deleted after success.
    assert_nothing_left(process)


def test_dead_worker_without_restarts_fails_fast_naming_it(tmp_path):
    process = launch(
        tmp_path,
        "--workers",
        "2",
        script_args=[
            "--epochs",
            "2",
            "--kill-worker",
            "1",
            "--kill-epoch",
            "0",
            "--kill-batch",
            "1",
        ],
    )
    # Fails fast: the launcher stops worker 0, which would otherwise wait on
    # its dead peer; `launch`'s subprocess timeout only catches a hang.
    assert process.returncode == 128 + 9, describe(process)
    assert re.search(r"worker 1 \(pid \d+\) was killed by SIGKILL", process.stderr)
    assert "worker 0: stopped by the launcher" in process.stderr, describe(process)
    assert not results(process)
    assert_nothing_left(process)


def test_survivor_of_a_dead_peer_exits_with_a_clear_error(tmp_path):
    """Without a launcher to stop it (workers on separate machines), a worker
    whose peer died fails within the collective timeout instead of hanging."""
    from parallel_keras.multi_worker import launch as launch_lib

    addresses = [f"127.0.0.1:{port}" for port in launch_lib.pick_loopback_ports(2)]
    out = tmp_path / "out"
    out.mkdir()
    workers = []
    for index in range(2):
        env = dict(os.environ)
        env.update(
            TF_CPP_MIN_LOG_LEVEL="2",
            TF_CONFIG=launch_lib.tf_config(addresses, index),
            PARALLEL_KERAS_COLLECTIVE_TIMEOUT="10",
        )
        workers.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "parallel_keras.multi_worker.bootstrap",
                    os.path.join(SCRIPTS, "train.py"),
                    "--out",
                    str(out),
                    "--epochs",
                    "50",
                    "--kill-worker",
                    "1",
                    "--kill-epoch",
                    "1",
                    "--kill-batch",
                    "1",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        # Only a hang guard: a survivor that waited on its dead peer would
        # never exit. The collective timeout (10 s) is what ends it.
        _, survivor_err = workers[0].communicate(timeout=300)
    finally:
        for worker in workers:
            worker.kill()
            worker.communicate()
    assert workers[1].returncode == -9
    assert workers[0].returncode == 75, survivor_err[-3000:]
    assert "worker 0 lost contact with the other workers" in survivor_err
