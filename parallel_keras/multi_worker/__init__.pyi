# SPDX-License-Identifier: Apache-2.0
# The public names of parallel_keras.multi_worker, listed once; `__init__.py`
# loads them lazily (the launcher process never imports TensorFlow).
# `BackupAndRestore`, `notebook_launcher` and `write_path` are exported at the
# top level (`parallel_keras.BackupAndRestore`).

from ..cluster.membership import WorkerInfo as WorkerInfo
from ..cluster.membership import is_multi_worker as is_multi_worker
from ..cluster.membership import worker_info as worker_info
from ..cluster.strategy import initialize as initialize
from ..cluster.writes import is_chief as is_chief
from .notebook import WorkerError as WorkerError
from .sharding import shard_by_data as shard_by_data
