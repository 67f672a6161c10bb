# SPDX-License-Identifier: Apache-2.0
"""Tests of migrate/report.py: three kinds of line, each counted."""

from __future__ import annotations

from parallel_keras.migrate import report as report_lib


def test_report_separates_rewritten_compatibility_and_flagged_lines():
    report = report_lib.FileReport(
        "train.py",
        changes=[
            report_lib.Change(2, "optimizers", "`lr=` -> `learning_rate=`"),
            report_lib.Change(
                5,
                "TF1 sessions",
                "`tf.Session()` -> `tf.compat.v1.Session()`: the session is returned",
                modern="tf.function and eager tensors",
            ),
        ],
        flags=[report_lib.Flag(9, "TF1 sessions", "memory fraction", "set a memory limit")],
    )
    other = report_lib.FileReport("data.py", [report_lib.Change(1, "numpy2", "np.float")])
    lines = report_lib.format_report([report, other]).splitlines()
    assert lines[:9] == [
        "train.py: 1 rewritten, 1 through a compatibility path, 1 flagged",
        "  line 2: [optimizers] `lr=` -> `learning_rate=`",
        "  runs through a compatibility path (modernise later):",
        "  line 5: COMPATIBILITY [TF1 sessions] `tf.Session()` -> `tf.compat.v1.Session()`: "
        "the session is returned",
        "    modern form: tf.function and eager tensors",
        "  needs a person:",
        "  line 9: FLAGGED [TF1 sessions] memory fraction",
        "    what to do: set a memory limit",
        "data.py: 1 rewritten, 0 through a compatibility path, 0 flagged",
    ]
    assert lines[-1] == "2 files: 2 rewritten, 1 through a compatibility path, 1 flagged, 0 errors"
