"""Multi-worker training: one script on one machine or many.

* `cluster`: reads `TF_CONFIG` (or a cluster resolver) and creates the
  process's `MultiWorkerMirroredStrategy`, which `multi_gpu_model` uses
  when the cluster has more than one worker.
* `launch` / `bootstrap`: `parallel-keras launch` and what each worker runs.
* `notebook` / `run_function` / `functions`: `notebook_launcher`, the same
  group started from a notebook cell around a function.
* `writes`: only the chief writes the files the user sees.
* `backup`: `BackupAndRestore` that resumes a restarted group.
* `sharding`: the deliberate auto-shard policy for input pipelines.

Names load on first use: the launcher process never imports TensorFlow.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "BackupAndRestore": "parallel_keras.multi_worker.backup",
    "initialize": "parallel_keras.multi_worker.cluster",
    "is_multi_worker": "parallel_keras.multi_worker.cluster",
    "notebook_launcher": "parallel_keras.multi_worker.notebook",
    "WorkerError": "parallel_keras.multi_worker.notebook",
    "worker_info": "parallel_keras.multi_worker.cluster",
    "WorkerInfo": "parallel_keras.multi_worker.cluster",
    "shard_by_data": "parallel_keras.multi_worker.sharding",
    "is_chief": "parallel_keras.multi_worker.writes",
    "write_path": "parallel_keras.multi_worker.writes",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(
            f"module 'parallel_keras.multi_worker' has no attribute {name!r}"
        )
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
