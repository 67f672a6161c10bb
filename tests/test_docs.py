# SPDX-License-Identifier: Apache-2.0
"""The documentation: the site builds in strict mode, and every Python block
of the README and of each docs page runs as written.

Each page's ```python blocks run in order in one fresh process (a page's
later blocks use the names its first block defines), in an empty folder, on
the simulated devices the page itself asks for.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def python_blocks(page: pathlib.Path) -> list[str]:
    return _PYTHON_BLOCK.findall(page.read_text())


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


def test_the_pages_with_code_are_found():
    names = {page.name for page in PAGES_WITH_CODE}
    assert {
        "README.md",
        "data-parallelism.md",
        "saving.md",
        "device-placement.md",
        "multi-worker.md",
    } <= names


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda page: page.name)
def test_every_python_block_of_the_page_runs_as_written(page, tmp_path):
    code = "\n\n".join(python_blocks(page))
    process = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert process.returncode == 0, process.stderr[-4000:]


def test_the_site_builds_in_strict_mode(tmp_path):
    # Strict: a broken link, a missing page in the nav or a reference
    # mkdocstrings cannot resolve fails the build.
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--site-dir",
            str(tmp_path / "site"),
            "--config-file",
            str(REPO / "mkdocs.yml"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()
