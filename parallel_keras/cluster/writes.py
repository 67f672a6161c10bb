# SPDX-License-Identifier: Apache-2.0
"""Only the chief writes: where each worker's files go.

In multi-worker training every worker runs the same script, so every worker
reaches each `save`, checkpoint and TensorBoard call. The TF multi-worker
guide's rule: the chief writes the real file; the other workers write the
same file into a temporary folder of their own, removed at the end (they
must still run the call, since saving may involve collectives). On one
machine `write_path` returns its argument unchanged.

Example:

    import parallel_keras
    checkpoint = keras.callbacks.ModelCheckpoint(
        parallel_keras.write_path("checkpoints/{epoch:02d}.keras"))
    ...
    parallel_model.save(parallel_keras.write_path("model.keras"))
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading

from absl import logging

from parallel_keras.cluster import membership, settings
from parallel_keras.cluster import strategy as cluster_strategy

_LOCK = threading.Lock()
_TEMP_DIR: str | None = None


def is_chief() -> bool:
    """Whether this process writes the files the user sees.

    True on one machine, and on the chief (or worker 0 when the cluster has
    no chief) of a multi-worker cluster.
    """
    strategy = cluster_strategy.current_strategy()
    if strategy is not None:
        return bool(strategy.extended.should_checkpoint)
    return membership.worker_info().is_chief


def worker_temp_dir() -> str:
    """This non-chief worker's temporary folder, created on first use.

    Removed when the process exits (`cleanup`).
    """
    global _TEMP_DIR
    with _LOCK:
        if _TEMP_DIR is None or not os.path.isdir(_TEMP_DIR):
            index = membership.worker_info().worker_index
            # Under `parallel-keras launch` the folder lives in one the
            # launcher removes, so it goes even when this worker is killed.
            parent = settings.current().worker_temp_root
            _TEMP_DIR = tempfile.mkdtemp(prefix=f"parallel_keras_worker{index}_", dir=parent)
            atexit.register(cleanup)
        return _TEMP_DIR


def write_path(filepath: str | os.PathLike) -> str:
    """Where this worker writes `filepath`.

    Args:
        filepath: The path the user wants written (file or folder; Keras
            format placeholders such as `{epoch}` are kept).

    Returns:
        `filepath` itself on the chief (and on one machine); on other
        workers the same name inside `worker_temp_dir()`.

    Example:

    >>> import parallel_keras
    >>> parallel_keras.write_path("model.keras")  # on one machine
    'model.keras'
    """
    filepath = os.fspath(filepath)
    if is_chief():
        return filepath
    parent = os.path.basename(os.path.dirname(os.path.abspath(filepath)))
    target = os.path.join(worker_temp_dir(), parent, os.path.basename(filepath))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    return target


def cleanup() -> None:
    """Removes this worker's temporary folder (safe to call repeatedly)."""
    global _TEMP_DIR
    with _LOCK:
        folder, _TEMP_DIR = _TEMP_DIR, None
    if folder and os.path.isdir(folder):
        shutil.rmtree(folder, ignore_errors=True)
        logging.info("parallel_keras: removed worker temporary folder %s", folder)
