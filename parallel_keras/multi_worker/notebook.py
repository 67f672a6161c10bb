# SPDX-License-Identifier: Apache-2.0
"""`notebook_launcher`: a multi-worker run from a notebook cell.

The notebook's kernel starts W fresh worker processes (through the same
launcher as `parallel-keras launch`, each with its own `TF_CONFIG`), runs
`function(*args)` in each, streams their output into the cell prefixed with
`[worker I]`, and returns their return values. TensorFlow only ever starts
in the workers: the kernel keeps no state of theirs and can launch again.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from parallel_keras.multi_worker import functions
from parallel_keras.multi_worker import launch as launch_lib

_WORKER_MODULE = "parallel_keras.multi_worker.run_function"


class WorkerError(RuntimeError):
    """A worker of `notebook_launcher` failed.

    Attributes:
        worker: Index of the first worker that failed.
        traceback: The worker's traceback (empty when it was killed).
    """

    def __init__(self, message: str, worker: int, traceback: str = ""):
        super().__init__(message)
        self.worker = worker
        self.traceback = traceback


def notebook_launcher(
    function: Callable[..., Any],
    args: Sequence[Any] = (),
    workers: int = 2,
    devices_per_worker: int = 1,
    max_restarts: int = 0,
    output: TextIO | None = None,
) -> list[Any]:
    """Runs `function(*args)` as every worker of a multi-worker group.

    Inside `function`, `parallel_keras.multi_gpu_model` replicates over
    every worker, `devices_per_worker` devices each, exactly as in a script
    under `parallel-keras launch`. Output is streamed as it comes.

    Args:
        function: What each worker runs; it may be defined in the notebook.
            It, its arguments and the notebook globals it uses must be
            picklable (create models and datasets inside it).
        args: Positional arguments of `function`. Defaults to ().
        workers: Number of worker processes. Defaults to 2.
        devices_per_worker: Simulated CPU devices per worker (GPUs on a
            machine that has them). Defaults to 1.
        max_restarts: Times the group is restarted after a failure.
            Defaults to 0.
        output: Stream receiving the workers' prefixed output. Defaults to
            None (`sys.stdout`, the cell).

    Returns:
        The workers' return values, by worker index.

    Raises:
        TypeError: If `function` or `args` cannot be sent to another
            process (nothing started then).
        ValueError: If `workers`, `devices_per_worker` or `max_restarts` is
            invalid.
        WorkerError: Naming the first worker that failed, with its
            traceback.

    Example:

    >>> import parallel_keras
    >>> def where():
    ...     from parallel_keras import multi_worker
    ...     return multi_worker.worker_info().worker_index
    >>> parallel_keras.notebook_launcher(where, workers=2)  # doctest: +SKIP
    [0, 1]
    """
    payload = (
        functions.dump_function(function),
        [functions.dump_value(arg, f"args[{i}]") for i, arg in enumerate(args)],
    )
    if (
        isinstance(devices_per_worker, bool)
        or not isinstance(devices_per_worker, int)
        or (devices_per_worker < 1)
    ):
        raise ValueError(
            "devices_per_worker must be a positive integer. Received: "
            f"devices_per_worker={devices_per_worker!r}. Pass e.g. "
            "devices_per_worker=2."
        )
    folder = tempfile.mkdtemp(prefix="parallel_keras_notebook_")
    try:
        payload_path = os.path.join(folder, "function.pkl")
        with open(payload_path, "wb") as file:
            pickle.dump(payload, file)
        result = launch_lib.launch(
            [payload_path, folder],
            workers=workers,
            max_restarts=max_restarts,
            devices_per_worker=devices_per_worker,
            output=output or sys.stdout,
            bootstrap_module=_WORKER_MODULE,
        )
        outcomes = {}
        for index in range(workers):
            path = os.path.join(folder, f"result-{index}.pkl")
            if os.path.exists(path):
                with open(path, "rb") as file:
                    outcomes[index] = pickle.load(file)
        if result.exit_code != 0:
            failed = [index for index, outcome in sorted(outcomes.items()) if outcome[0] == "error"]
            worker = result.failed_worker if result.failed_worker is not None else -1
            if worker not in failed and failed:
                worker = failed[0]
            if worker in outcomes and outcomes[worker][0] == "error":
                traceback = outcomes[worker][1]
                last = traceback.strip().splitlines()[-1] if traceback.strip() else ""
                raise WorkerError(
                    f"worker {worker} of {workers} failed: {last}\n\n"
                    f"Traceback of worker {worker}:\n{traceback}",
                    worker,
                    traceback,
                )
            raise WorkerError(
                f"{result.message} Its output is above, prefixed with [worker {worker}].",
                worker,
            )
        return [outcomes[index][1] for index in range(workers)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
