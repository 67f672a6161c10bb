# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras demo`, the README's main job, through its console script."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from parallel_keras.cli import demo, main

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess


def _executable() -> str:
    return shutil.which("parallel-keras") or os.path.join(
        os.path.dirname(sys.executable), "parallel-keras"
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One run of the demo, as a user starts it; each test checks one behaviour."""
    tmp_path = tmp_path_factory.mktemp("demo")
    process = subprocess.run(
        # --batch_size: the old spelling still works.
        [_executable(), "demo", "--epochs", "2", "--samples", "512", "--batch_size", "64"],
        capture_output=True,
        text=True,
        timeout=600,
        # The defaults a user gets: conftest.py set TF_CPP_MIN_LOG_LEVEL.
        env={
            **{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"},
            "TMPDIR": str(tmp_path),
        },
    )
    assert process.returncode == 0, process.stdout + process.stderr
    return process, process.stdout.splitlines(), tmp_path


def _output_folder(lines):
    folder = next(line for line in lines if line.startswith("Output folder: "))
    return pathlib.Path(folder[len("Output folder: ") :])


def test_demo_is_quiet(demo_run):
    process, _, _ = demo_run
    # No TensorFlow start-up lines, nothing that looks like an error.
    assert process.stderr == ""


def test_demo_says_it_simulates_devices_and_lists_them_once(demo_run):
    _, lines, _ = demo_run
    assert lines[0].startswith("No GPU found: simulating 4 devices")
    assert sum("CPU:3" in line for line in lines) == 1


def test_demo_trains_the_epochs_asked_for_and_reports_throughput(demo_run):
    _, lines, _ = demo_run
    epochs = [line for line in lines if line.startswith("Epoch ")]
    assert [line.split(":")[0] for line in epochs] == ["Epoch 1/2", "Epoch 2/2"]
    assert all("samples/s" in line for line in epochs)


def test_demo_reloads_its_model_on_one_device(demo_run):
    _, lines, _ = demo_run
    reloading = lines.index("Reloading it on one device in a fresh Python process...")
    assert "(OK," in lines[reloading + 1]


def test_demo_writes_under_tmpdir_and_removes_its_folder(demo_run):
    _, lines, tmp_path = demo_run
    folder = _output_folder(lines)
    assert folder.parent == tmp_path
    assert lines[-1] == f"Removed {folder} (pass --keep to keep it)."
    assert not folder.exists() and list(tmp_path.iterdir()) == []


def test_gpus_1_is_a_usage_error_not_a_traceback():
    process = subprocess.run(
        [_executable(), "demo", "--gpus", "1"], capture_output=True, text=True, timeout=120
    )
    assert process.returncode == 2
    assert "data parallelism needs at least 2 replicas. Received: --gpus 1" in process.stderr
    assert "Traceback" not in process.stderr


def test_old_flag_spellings_are_accepted_but_not_shown():
    parser = main.build_parser()
    args = parser.parse_args(["demo", "--batch_size", "64", "--output_dir", "out"])
    assert (args.batch_size, args.output_dir, args.keep) == (64, "out", False)
    args = parser.parse_args(["demo", "--batch-size", "32", "--output-dir", "o", "--keep"])
    assert (args.batch_size, args.output_dir, args.keep) == (32, "o", True)
    demo_help = parser._subparsers._group_actions[0].choices["demo"].format_help()
    assert "--batch-size" in demo_help and "--batch_size" not in demo_help
    assert "--output_dir" not in demo_help


@pytest.mark.parametrize(
    "physical_gpus, gpus, expected_type, expected_replicas, says",
    [
        (0, None, "CPU", 4, "No GPU found: simulating 4 devices on the CPU"),
        (0, 2, "CPU", 2, "simulating 2 devices"),
        (
            1,
            None,
            "GPU",
            2,
            "data parallelism needs at least two devices, so the GPU "
            "is split into 2 logical GPUs (parallel_keras.simulate_devices"
            '(2, "GPU"))',
        ),
        (1, 3, "GPU", 3, "split into 3 logical GPUs"),
        (2, None, None, 2, "2 GPUs found: replicating on 2"),
        (8, 4, None, 4, "8 GPUs found: replicating on 4"),
    ],
)
def test_device_plan(physical_gpus, gpus, expected_type, expected_replicas, says):
    simulate, replicas, message = demo.device_plan(physical_gpus, gpus)
    assert (simulate, replicas) == (expected_type, expected_replicas)
    assert says in message
