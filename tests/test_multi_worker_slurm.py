# SPDX-License-Identifier: Apache-2.0
"""Slurm: workers find each other through `SlurmClusterResolver`.

No Slurm here: the test starts each task itself, as `srun` would, with the
environment srun gives a task of a one-node, two-task step, on loopback.
"""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from parallel_keras.multi_worker import launch as launch_lib

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
sys.path.insert(0, SCRIPTS)

import common  # noqa: E402
import helpers  # noqa: E402

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess


def srun_environment(procid, ntasks, nodelist="localhost"):
    """What srun sets for task `procid` of a one-node step (the parts TF reads)."""
    return {
        "SLURM_JOB_ID": "4242",
        "SLURM_STEP_ID": "0",
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(procid),
        "SLURM_NODEID": "0",
        "SLURM_NTASKS": str(ntasks),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_NODELIST": nodelist,
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_TASKS_PER_NODE": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": str(ntasks),
    }


def consecutive_free_ports(count):
    """A port base with `count` free ports from it (the resolver's layout)."""
    for _ in range(50):
        base = launch_lib.pick_loopback_ports(1)[0]
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no consecutive free ports")


def test_two_srun_tasks_train_like_one_device(tmp_path):
    port_base = consecutive_free_ports(2)
    (tmp_path / "out").mkdir()
    tasks = []
    for procid in range(2):
        env = dict(
            os.environ,
            TF_CPP_MIN_LOG_LEVEL="2",
            TMPDIR=str(tmp_path),
            **srun_environment(procid, 2),
        )
        env.pop("TF_CONFIG", None)
        tasks.append(
            subprocess.Popen(
                [
                    *helpers.LAUNCH,
                    "--slurm",
                    "--slurm-port-base",
                    str(port_base),
                    "--startup-timeout",
                    "120",
                    os.path.join(SCRIPTS, "train.py"),
                    "--out",
                    str(tmp_path / "out"),
                    "--epochs",
                    "1",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        outputs = [task.communicate(timeout=300) for task in tasks]
    finally:
        for task in tasks:
            if task.poll() is None:
                task.kill()
                task.communicate()
    x, y = common.data()
    reference = common.build_template()
    reference.compile(optimizer=common.optimizer(), loss="mse")
    reference.fit(x, y, batch_size=common.GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
    for procid, (task, (stdout, stderr)) in enumerate(zip(tasks, outputs)):
        assert task.returncode == 0, stdout[-3000:] + stderr[-3000:]
        result = helpers.worker_records(stdout, "RESULT").get(procid)
        assert result, stdout[-3000:] + stderr[-3000:]
        assert result["worker"] == procid and result["replicas"] == 2
        assert result["chief"] == (procid == 0)
        for got, want in zip(result["weights"], reference.get_weights()):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)
