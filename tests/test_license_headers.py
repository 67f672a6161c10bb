# SPDX-License-Identifier: Apache-2.0
"""Every source file of the project carries its license (SPDX header line)."""

from __future__ import annotations

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
SPDX = "# SPDX-License-Identifier: Apache-2.0"
# Legacy user scripts that `parallel-keras migrate` reads: test data, not ours.
DATA = (
    "tests/migrate_corpus",
    "tests/migrate/snippets",
    "tests/migrate/scripts",
    "tests/migrate/projects",
)


def test_every_source_file_starts_with_the_spdx_line():
    missing = []
    for folder in ("parallel_keras", "tests", "benchmarks", "examples"):
        for path in sorted((REPO / folder).rglob("*.py*")):
            relative = path.relative_to(REPO).as_posix()
            if path.suffix not in (".py", ".pyi") or relative.startswith(DATA):
                continue
            head = path.read_text(encoding="utf-8").splitlines()[:3]
            if SPDX not in head:
                missing.append(relative)
    assert missing == [], f"add the line {SPDX!r} at the top of: {missing}"
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License")
