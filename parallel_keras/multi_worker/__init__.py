# SPDX-License-Identifier: Apache-2.0
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
import warnings

from parallel_keras import _exports

# The exports are the imports of `__init__.pyi`, the one list of them.
_getattr_export, __dir__, __all__ = _exports.attach_stub(__name__, __file__)

# Exported at the top level (`parallel_keras.X`), their one public path;
# these spellings of 0.1.0 still work, with a DeprecationWarning.
_MOVED = {
    "BackupAndRestore": "parallel_keras.multi_worker.backup",
    "notebook_launcher": "parallel_keras.multi_worker.notebook",
    "write_path": "parallel_keras.cluster.writes",
}


def __getattr__(name: str):
    if name in _MOVED:
        warnings.warn(
            f"parallel_keras.multi_worker.{name} is deprecated and will be removed; "
            f"use parallel_keras.{name}, the same object.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(_MOVED[name]), name)
    return _getattr_export(name)
