"""Multi-worker training: one script on one machine or many.

The top layer; the cluster state it builds on (`TF_CONFIG`, the
process's `MultiWorkerMirroredStrategy`, chief-only writes) is
`parallel_keras.cluster`, which the rest of the library imports.

* `launch`: `parallel-keras launch`; `group_plan` (which workers run here,
  at which addresses), `worker_group` (their processes and restarts),
  `slurm` (a group started by `srun`).
* `bootstrap`: what each worker runs; `worker_env` is what the launcher
  tells it through its environment.
* `notebook` / `run_function` / `functions`: `notebook_launcher`, the same
  group started from a notebook cell around a function.
* `backup`: `BackupAndRestore` that resumes a restarted group.
* `sharding`: the deliberate auto-shard policy for input pipelines.

Names load on first use: the launcher process never imports TensorFlow.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "BackupAndRestore": "parallel_keras.multi_worker.backup",
    "initialize": "parallel_keras.cluster.strategy",
    "is_multi_worker": "parallel_keras.cluster.membership",
    "notebook_launcher": "parallel_keras.multi_worker.notebook",
    "WorkerError": "parallel_keras.multi_worker.notebook",
    "worker_info": "parallel_keras.cluster.membership",
    "WorkerInfo": "parallel_keras.cluster.membership",
    "shard_by_data": "parallel_keras.multi_worker.sharding",
    "is_chief": "parallel_keras.cluster.writes",
    "write_path": "parallel_keras.cluster.writes",
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
