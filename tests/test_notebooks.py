# SPDX-License-Identifier: Apache-2.0
"""Every notebook runs top to bottom in a fresh Jupyter kernel.

Each notebook is executed with nbclient in a real IPython kernel started
from this interpreter (so it sees this environment's parallel_keras, and
nothing is registered with Jupyter), from the `notebooks/` folder, as a
user opening it would. Any cell error fails the test; so does a notebook
stored with outputs, one with a cell that hangs (no answer in 10 minutes:
a hang guard, not a speed limit, on a shared machine), or one whose outputs
carry TensorFlow's log lines (start-up C++ lines, INFO logs).
"""

import glob
import os
import re
import sys

import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK_DIR = os.path.join(REPO_ROOT, "notebooks")
NOTEBOOKS = sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))
# Per cell; only catches a hang. Speed is the benchmarks' business.
CELL_HANG_TIMEOUT_S = 600
# TensorFlow's Python INFO lines and its C++ log lines (I/W/E + date).
_TENSORFLOW_LOG = re.compile(
    r"^(INFO:tensorflow:|[IWE]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl)"
)


class _ThisInterpreterKernels(KernelSpecManager):
    """Resolves every kernel name to an IPython kernel on `sys.executable`."""

    def get_kernel_spec(self, kernel_name):
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name=f"Python ({sys.executable})",
            language="python",
            resource_dir="",
        )


def test_the_notebooks_exist():
    names = [os.path.basename(path) for path in NOTEBOOKS]
    assert names[:5] == [
        "01_quickstart.ipynb",
        "02_device_parallel.ipynb",
        "03_benchmarks.ipynb",
        "04_migrate.ipynb",
        "05_multi_worker.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_in_a_fresh_kernel(path):
    notebook = nbformat.read(path, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells, "a notebook without code"
    assert all(not cell.outputs and cell.execution_count is None for cell in code_cells), (
        "notebooks are stored without outputs (clear them before saving)"
    )
    manager = KernelManager(kernel_spec_manager=_ThisInterpreterKernels())
    client = nbclient.NotebookClient(
        notebook,
        km=manager,
        timeout=CELL_HANG_TIMEOUT_S,
        resources={"metadata": {"path": NOTEBOOK_DIR}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{os.path.basename(path)}: a cell failed:\n{error}")
    assert all(cell.execution_count for cell in code_cells)
    log_lines = [
        line
        for cell in code_cells
        for output in cell.outputs
        if output.output_type == "stream"
        for line in output.text.splitlines()
        if _TENSORFLOW_LOG.match(line)
    ]
    assert log_lines == [], "TensorFlow log lines in the outputs"


def test_the_benchmarks_notebook_finds_the_repository_from_any_folder(tmp_path):
    """Notebook 03's set-up cell, started outside `notebooks/` (no `..` to lean on)."""
    import subprocess

    notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, "03_benchmarks.ipynb"), as_version=4)
    setup = next(cell.source for cell in notebook.cells if "find_repository" in cell.source)
    process = subprocess.run(
        [sys.executable, "-c", setup + "\nprint('REPO', REPO_ROOT)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.split()[-1] == REPO_ROOT
