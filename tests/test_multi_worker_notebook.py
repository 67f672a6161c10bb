# SPDX-License-Identifier: Apache-2.0
"""`notebook_launcher` from a `__main__` module, as a notebook kernel runs it.

The notebook itself (`notebooks/05_multi_worker.ipynb`, run by
test_notebooks.py) checks training; this checks the launcher's contract:
functions defined in `__main__`, streamed prefixed output, return values,
the failing worker named with its traceback, and no TensorFlow runtime in
the calling process.
"""

import os
import subprocess
import sys
import textwrap

import pytest

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

_MAIN = textwrap.dedent(
    """
    import numpy as np
    import parallel_keras
    from parallel_keras import _internals
    from parallel_keras.multi_worker import WorkerError

    OFFSET = 10

    def describe(scale):
        from parallel_keras import multi_worker
        info = multi_worker.worker_info()
        print(f"hello from {info.worker_index} of {info.num_workers}")
        return {"worker": info.worker_index, "value": OFFSET + scale * info.worker_index,
                "array": np.arange(3)}

    def fails_on_worker_1():
        from parallel_keras import multi_worker
        if multi_worker.worker_info().worker_index == 1:
            raise KeyError("missing column")

    results = parallel_keras.notebook_launcher(describe, args=(5,), workers=2)
    print("RESULTS", [(r["worker"], r["value"], r["array"].tolist()) for r in results])
    try:
        parallel_keras.notebook_launcher(fails_on_worker_1, workers=2)
    except WorkerError as error:
        print("FAILED", error.worker, "KeyError: 'missing column'" in error.traceback,
              str(error).splitlines()[0])
    print("KERNEL_TF_STARTED", _internals.tf_runtime_initialized())
    """
)


def test_notebook_launcher_runs_main_functions_and_names_the_failing_worker(tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text(_MAIN)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    out = process.stdout
    assert "[worker 0] hello from 0 of 2" in out and "[worker 1] hello from 1 of 2" in out
    assert "RESULTS [(0, 10, [0, 1, 2]), (1, 15, [0, 1, 2])]" in out
    assert "FAILED 1 True worker 1 of 2 failed: KeyError: 'missing column'" in out
    assert "KERNEL_TF_STARTED False" in out
    assert os.listdir(tmp_path) == ["kernel.py"]
