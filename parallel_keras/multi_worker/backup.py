"""Recovery from a lost worker: Keras `BackupAndRestore`, multi-worker aware.

`parallel-keras launch --max-restarts K` restarts the whole group when a
worker dies. With this callback in `fit`, the restarted group resumes from
the last backup instead of from scratch: every worker reads the chief's
backup at the start of training; only the chief writes new backups (the
others write theirs into their temporary folder, removed at the end).

Keras resumes at the start of the epoch after the last backup (a batch-level
`save_freq` makes backups more often, but the interrupted epoch is
replayed from its start). With `shuffle=False` or a seeded input pipeline
the resumed run then trains to the same weights as an uninterrupted one.

The backup folder must be visible to every worker (one machine, or a
shared filesystem).
"""

from __future__ import annotations

import os

import keras

from parallel_keras import _internals
from parallel_keras.multi_worker import writes


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` where only the chief writes.

    Args:
        backup_dir: Folder of the backup, shared by all workers.
        save_freq: `"epoch"` or a number of batches between backups.
            Defaults to `"epoch"`.
        double_checkpoint: Keep the previous backup too, used if the latest
            cannot be read. Defaults to False.
        delete_checkpoint: Delete the backup when training ends normally.
            Defaults to True.

    Example:

    >>> from parallel_keras import multi_worker
    >>> backup = multi_worker.BackupAndRestore("/tmp/backup")
    >>> # parallel_model.fit(x, y, epochs=5, callbacks=[backup])
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike,
        save_freq: str | int = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
    ):
        backup_dir = os.fspath(backup_dir)
        super().__init__(
            backup_dir,
            save_freq=save_freq,
            double_checkpoint=double_checkpoint,
            delete_checkpoint=delete_checkpoint,
        )
        self._shared_backup_dir = backup_dir

    @property
    def shared_backup_dir(self) -> str:
        """The folder every worker restores from (the chief's backup)."""
        return self._shared_backup_dir

    def on_train_begin(self, logs=None):
        _internals.point_backup_at(self, self._shared_backup_dir)
        super().on_train_begin(logs)
        _internals.point_backup_at(self, writes.write_path(self._shared_backup_dir))
