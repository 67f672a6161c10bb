# SPDX-License-Identifier: Apache-2.0
"""The `parallel-keras` command line follows argparse's and pip's conventions.

Each case runs the real console entry point in a subprocess; none of them
starts TensorFlow.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from parallel_keras.cli import main as cli_main

pytestmark = pytest.mark.subprocess

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENTRY = [sys.executable, "-c", "from parallel_keras.cli.main import run; run()"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_ENTRY, *args], capture_output=True, text=True, timeout=120)


def test_no_arguments_prints_the_help_with_every_command_and_exits_2():
    result = _run()
    # A missing input, as the exit-code table says.
    assert result.returncode == 2
    for command in cli_main.SUBCOMMANDS:
        assert f"\n    {command}" in result.stderr, result.stderr
    assert "exit codes:" in result.stderr
    assert result.stderr.endswith("parallel-keras: error: a COMMAND is required.\n")
    assert result.stdout == ""


def test_python_dash_m_parallel_keras_is_the_command():
    result = _run_module("-V")
    assert result.returncode == 0, result.stderr
    import parallel_keras

    assert result.stdout.strip() == f"parallel-keras {parallel_keras.__version__}"
    assert _run_module("--bogus").returncode == 2


def _run_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parallel_keras", *args], capture_output=True, text=True, timeout=120
    )


def test_migrate_verbose_help_does_not_speak_of_tensorflow():
    result = _run("migrate", "--help")
    assert result.returncode == 0
    verbose = result.stdout[result.stdout.index("-v, --verbose") :]
    assert "parallel_keras's INFO log lines" in verbose
    assert "TensorFlow" not in verbose.split("\n  -", 1)[0]


def test_an_unknown_top_level_flag_is_named_not_taken_for_a_missing_command():
    result = _run("--bogus")
    assert result.returncode == 2
    assert "parallel-keras: error: unrecognized arguments: --bogus" in result.stderr
    assert "required" not in result.stderr


# The smallest argv each command parses, so the unknown flag is what fails.
_VALID_ARGV = {
    "demo": [],
    "convert": ["legacy.h5", "--template", "t.py:build", "-o", "out.keras"],
    "launch": ["--workers", "2"],
    "migrate": ["script.py"],
}


@pytest.mark.parametrize("command", sorted(_VALID_ARGV))
def test_an_unknown_flag_after_a_command_shows_that_commands_usage(command):
    argv = [command, *_VALID_ARGV[command], "--bogus"]
    if command == "launch":
        # Everything after the script belongs to the script.
        argv = [command, "--bogus", *_VALID_ARGV[command], "train.py"]
    result = _run(*argv)
    assert result.returncode == 2
    assert result.stderr.startswith(f"usage: parallel-keras {command} ")
    assert f"parallel-keras {command}: error: unrecognized arguments: --bogus" in result.stderr


def test_every_command_is_covered_by_the_unknown_flag_test():
    assert set(_VALID_ARGV) == set(cli_main.SUBCOMMANDS)


def test_dash_capital_v_prints_the_version():
    import parallel_keras

    result = _run("-V")
    assert result.returncode == 0
    assert result.stdout.strip() == f"parallel-keras {parallel_keras.__version__}"


def test_command_help_shows_defaults_but_not_empty_ones():
    result = _run("demo", "--help")
    assert result.returncode == 0
    assert "Training epochs. (default: 3)" in result.stdout
    assert "(default: None)" not in result.stdout
    assert "(default: False)" not in result.stdout


def test_demo_output_dir_that_cannot_be_created_is_a_usage_error_without_traceback(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = _run("demo", "--output-dir", str(blocker / "sub" / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("parallel-keras demo: error: --output-dir must be a folder")
    assert str(blocker) in result.stderr


# An ASCII-only terminal: LC_ALL=C with Python's UTF-8 mode off (PEP 540
# turns it on for the C locale unless PYTHONUTF8=0).
_ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}


def _run_in_ascii_locale(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.update(_ASCII_LOCALE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_REPO, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [*_ENTRY, *args], capture_output=True, timeout=300, env=env, cwd=cwd, check=False
    )


def test_migrate_diff_of_chinese_comments_survives_an_ascii_terminal(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "# 用两个 GPU 训练\nfrom keras.utils import multi_gpu_model\n"
        "parallel = multi_gpu_model(model, gpus=2)  # 并行模型\n",
        encoding="utf-8",
    )
    result = _run_in_ascii_locale("migrate", str(script), "--diff")
    stdout, stderr = result.stdout.decode("ascii"), result.stderr.decode("ascii")
    assert "UnicodeEncodeError" not in stderr and "Traceback" not in stderr, stderr
    assert result.returncode in (0, 1), stderr  # 1: the script needs changes.
    assert "-from keras.utils import multi_gpu_model" in stdout, stdout
    assert "\\u7528\\u4e24\\u4e2a GPU" in stdout or "# \\u5e76\\u884c" in stdout, stdout


def test_launch_relays_non_ascii_worker_lines_on_an_ascii_terminal(tmp_path):
    script = tmp_path / "speak.py"
    script.write_text("print('训练 done', flush=True)\n", encoding="utf-8")
    result = _run_in_ascii_locale("launch", "--workers", "2", str(script))
    stdout, stderr = result.stdout.decode("ascii"), result.stderr.decode("ascii")
    assert result.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    for worker in (0, 1):
        assert f"[worker {worker}] \\u8bad\\u7ec3 done" in stdout, stdout
