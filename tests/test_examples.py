# SPDX-License-Identifier: Apache-2.0
"""Every script in examples/ runs as its docstring says, on simulated devices."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import helpers
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def _run(argv: list[str], tmp_path: pathlib.Path) -> subprocess.CompletedProcess:
    # As a user runs them: no TF_CPP_MIN_LOG_LEVEL of the test session's.
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env["TMPDIR"] = str(tmp_path)
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_every_example_is_run_here():
    assert {path.name for path in EXAMPLES.glob("*.py")} == {
        "legacy_multi_gpu_script.py",
        "two_branch_placement.py",
        "convert_legacy_h5.py",
        "multi_worker_with_backups.py",
    }


def test_legacy_script_trains_checkpoints_and_reloads(tmp_path):
    result = _run(
        [
            sys.executable,
            str(EXAMPLES / "legacy_multi_gpu_script.py"),
            "--gpus",
            "4",
            "--output-dir",
            str(tmp_path / "out"),
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    saved = sorted(os.listdir(tmp_path / "out"))
    assert "model.keras" in saved
    assert len([name for name in saved if name.startswith("weights-")]) == 2


def test_two_branch_placement_runs_ops_on_both_devices(tmp_path):
    result = _run([sys.executable, str(EXAMPLES / "two_branch_placement.py")], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "shared_lstm (call 1) -> /gpu:1" in result.stdout
    counts_line = next(
        line for line in result.stdout.splitlines() if line.startswith("ops per device:")
    )
    assert "'/cpu:0'" in counts_line and "'/cpu:1'" in counts_line


def test_convert_legacy_h5_loads_converts_and_refuses_a_mismatch(tmp_path):
    result = _run([sys.executable, str(EXAMPLES / "convert_legacy_h5.py")], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "predictions match the trained model" in result.stdout
    assert "refused as expected" in result.stdout


def _launch_example(tmp_path, name, *flags):
    result = _run(
        [
            *helpers.LAUNCH,
            "--workers",
            "2",
            "--max-restarts",
            "1",
            str(EXAMPLES / "multi_worker_with_backups.py"),
            "--output-dir",
            str(tmp_path / name),
            *flags,
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / name / "model.keras").is_file()
    finals = {
        line.split("final loss ", 1)[1]
        for line in result.stdout.splitlines()
        if "final loss" in line
    }
    assert len(finals) == 1, result.stdout
    return result.stdout + result.stderr, finals.pop()


@pytest.mark.multiworker
def test_multi_worker_example_recovers_from_a_killed_worker_to_the_uninterrupted_loss(tmp_path):
    killed_output, killed_loss = _launch_example(tmp_path, "killed", "--kill-once")
    assert "attempts: 2" in killed_output
    # As quiet as the commands: no TensorFlow start-up lines from the workers,
    # and the restart line without absl's log prefix, like the launcher's others.
    assert "cuInit" not in killed_output and "oneDNN" not in killed_output
    restart = next(line for line in killed_output.splitlines() if "restarting the group" in line)
    assert restart.startswith("parallel-keras launch: worker 1 "), restart
    uninterrupted_output, uninterrupted_loss = _launch_example(tmp_path, "uninterrupted")
    assert "attempts: 1" in uninterrupted_output
    assert killed_loss == uninterrupted_loss
