# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras launch`: arguments, output, failure propagation, cleanup.

The workers here run `multi_worker_scripts/echo.py`, which trains nothing;
training, restarts and recovery are in test_multi_worker.py.
"""

import json
import os
import re
import socket
import subprocess

import helpers  # noqa: E402
import psutil
import pytest

from parallel_keras.multi_worker import launch

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
ECHO = os.path.join(SCRIPTS, "echo.py")


def echoes(stdout):
    return helpers.worker_records(stdout, "ECHO")


def test_tf_config_names_the_cluster_and_the_task():
    config = json.loads(launch.tf_config(["127.0.0.1:1", "127.0.0.1:2"], 1))
    assert config == {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 1},
    }


def test_picked_ports_are_distinct_and_free_on_loopback():
    ports = launch.pick_loopback_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_forwards_arguments_and_prefixes_each_workers_output():
    process = helpers.run_launch("--workers", "2", ECHO, "--sleep", "0", "extra", "--flag=1")
    assert process.returncode == 0, process.stderr[-3000:]
    found = echoes(process.stdout)
    assert sorted(found) == [0, 1]
    for worker in found.values():
        assert worker["argv"] == ["--sleep", "0", "extra", "--flag=1"]
    assert "all workers finished" in process.stdout
    addresses = re.search(r"workers: ([\d.:,]+)\)", process.stdout).group(1)
    assert all(a.startswith("127.0.0.1:") for a in addresses.split(","))


def test_first_failure_stops_the_others_and_sets_the_exit_code():
    # Worker 0 would sleep for 10 minutes; the launcher must stop it. The
    # subprocess timeout (well under 10 minutes) only catches a launcher that
    # waits for it; what is asserted is the work done: worker 0 was stopped.
    process = helpers.run_launch(
        "--workers",
        "2",
        ECHO,
        "--fail-worker",
        "1",
        "--code",
        "7",
        "--sleep",
        "600",
        timeout=300,
    )
    assert process.returncode == 7, process.stderr[-3000:]
    assert re.search(r"worker 1 \(pid \d+\) exited with code 7", process.stderr)
    assert "worker 0: stopped by the launcher" in process.stderr
    assert "worker 1: exit 7" in process.stderr
    left = [
        p.pid for p in psutil.process_iter(["cmdline"]) if ECHO in " ".join(p.info["cmdline"] or [])
    ]
    assert not left


def test_hosts_mode_runs_this_machines_worker_of_the_cluster():
    hosts = ",".join(f"127.0.0.1:{port}" for port in launch.pick_loopback_ports(2))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    machines = [
        subprocess.Popen(
            [*helpers.LAUNCH, "--hosts", hosts, "--index", str(index), ECHO],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    outputs = [machine.communicate(timeout=120) for machine in machines]
    for index, (machine, (stdout, stderr)) in enumerate(zip(machines, outputs)):
        assert machine.returncode == 0, stderr[-3000:]
        assert list(echoes(stdout)) == [index]


def test_a_group_far_above_the_cores_is_warned_about_before_it_starts(
    tmp_path, monkeypatch, caplog
):
    from parallel_keras.multi_worker import worker_group

    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    started = []
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(
        worker_group,
        "run_attempts",
        lambda *args: (
            started.append(args)
            or worker_group.LaunchResult(0, 1, None, "all workers finished", ())
        ),
    )
    with caplog.at_level("WARNING"):
        launch.launch([str(script)], workers=64)
    assert len(started) == 1
    text = " ".join(caplog.text.split())
    assert (
        "--workers 64 starts 64 TensorFlow processes on this machine, which has 2 CPU cores" in text
    )
    assert "Use at most 2 workers here" in text
    caplog.clear()
    with caplog.at_level("WARNING"):
        launch.launch([str(script)], workers=2)
    assert "TensorFlow processes" not in caplog.text
