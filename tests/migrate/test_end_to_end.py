# SPDX-License-Identifier: Apache-2.0
"""A Keras 2 / TF1 script using the issue-20 idioms migrates with no flag and runs."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from parallel_keras import migrate

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

_SCRIPT = pathlib.Path(__file__).parent / "scripts" / "keras2_tf1_mix.py"


def test_migrated_script_runs_on_keras3(tmp_path):
    result = migrate.migrate_source(_SCRIPT.read_text(), str(_SCRIPT))
    assert not result.report.flags
    assert migrate.migrate_source(result.migrated).migrated == result.migrated
    migrated = tmp_path / "train.py"
    migrated.write_text(result.migrated)
    run = subprocess.run(
        [sys.executable, str(migrated)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # The layer renamed from 'head/out', a finite best loss, a non-negative argmax sum.
    assert run.stdout.strip().splitlines()[-1] == "head_out True True"
