# SPDX-License-Identifier: Apache-2.0
"""The documentation: the site builds in strict mode, and every Python block
of the README and of each docs page runs as written.

Each page's ```python blocks run in order in one fresh process (a page's
later blocks use the names its first block defines), in an empty folder, on
the simulated devices the page itself asks for.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """The site, built once for the tests below (strict mode)."""
    folder = tmp_path_factory.mktemp("docs") / "site"
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
            str(folder),
            "--config-file",
            str(REPO / "mkdocs.yml"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    return folder


def test_the_site_builds_in_strict_mode(site):
    assert (site / "api" / "index.html").is_file()


def test_the_site_loads_nothing_from_the_network_and_highlights_code_itself(site):
    pages = list(site.rglob("*.html"))
    remote = {
        match
        for page in pages
        for match in re.findall(
            r"<(?:script|link)[^>]*(?:src|href)=\"(?:https?:)?//[^\"]*\"", page.read_text()
        )
    }
    assert remote == set()
    # Pygments' spans, written at build time (no highlight.js to run).
    assert '<span class="kn">import</span>' in (site / "index.html").read_text()


# Measured in the browser: each table's right edge against the page's
# content column, and the colours of highlighted code.
_MEASURE = """<!doctype html><html><body>
<iframe id="page" src="{url}" width="{width}" height="900"></iframe><pre id="out">pending</pre>
<script>
document.getElementById("page").onload = function () {{
  var page = this.contentDocument, tables = [];
  page.querySelectorAll(".md-typeset table").forEach(function (table) {{
    var column = table.closest(".md-content") || page.body;
    tables.push(table.scrollWidth <= table.parentElement.clientWidth + 1 &&
                table.getBoundingClientRect().right <= column.getBoundingClientRect().right + 1);
  }});
  var colours = {{}};
  page.querySelectorAll(".highlight code span").forEach(function (span) {{
    colours[getComputedStyle(span).color] = 1;
  }});
  document.getElementById("out").textContent = "MEASURED " + JSON.stringify({{
    tables: tables, colours: Object.keys(colours).length,
    code: page.querySelectorAll("pre code").length}});
}};
</script></body></html>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip(
        "No Chromium to take the screenshot with (Debian: apt-get install -y chromium); "
        "README.md's 'Documentation' section gives the step by hand."
    )


@pytest.mark.parametrize("page", ["benchmarks", "migrate-names", "data-parallelism"])
def test_wide_tables_fit_the_page_and_code_is_highlighted_in_headless_chromium(
    site, page, tmp_path
):
    chromium = _chromium()
    browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    url = (site / page / "index.html").as_uri()
    screenshot = tmp_path / f"{page}.png"
    subprocess.run(
        [*browser, f"--screenshot={screenshot}", "--window-size=1400,900", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    from matplotlib import image

    pixels = image.imread(screenshot)
    assert pixels.shape[:2] == (900, 1400) and pixels.std() > 0  # a page, not a blank
    measure = tmp_path / "measure.html"
    measure.write_text(_MEASURE.format(url=url, width=1400))
    process = subprocess.run(
        [
            *browser,
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
            measure.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"MEASURED (\{.*?\})<", process.stdout)
    assert found, process.stdout[-2000:] + process.stderr[-2000:]
    measured = json.loads(found[1])
    assert measured["tables"] and all(measured["tables"]), measured
    if measured["code"]:  # Highlighted: keywords, names, strings in colours of their own.
        assert measured["colours"] >= 3, measured
