# SPDX-License-Identifier: Apache-2.0
"""`run_python`: code in a fresh Python process, none of this one's TensorFlow state."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_python(
    code: str,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh Python process and returns the finished process.

    A fresh process has none of this process's TensorFlow state: no simulated
    devices, no strategies, nothing imported. Use it to check that a file
    loads on a single device with plain Keras.

    Args:
        code: Python source; dedented before running.
        env: Extra environment variables. Defaults to None.
        cwd: Working directory. Defaults to None (this one).
        timeout: Seconds before the process is killed. Defaults to 300.
        check: Raise `AssertionError` with the process output when it exits
            non-zero. Defaults to True.

    Returns:
        The `subprocess.CompletedProcess`, with `stdout` and `stderr` as text.
    """
    full_env = dict(os.environ)
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    full_env.update(env or {})
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and process.returncode != 0:
        raise AssertionError(
            f"Subprocess exited with {process.returncode}.\n"
            f"--- stdout ---\n{process.stdout}\n--- stderr ---\n{process.stderr}"
        )
    return process
