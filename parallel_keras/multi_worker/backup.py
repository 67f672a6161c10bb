"""Recovery from a lost worker: the whole training state, backed up and restored.

`parallel-keras launch --max-restarts K` restarts the group when a worker
dies. With this callback in `fit`, the restarted group resumes where the last
backup left it: model weights, optimizer state (Adam's moments, momentum,
the step count that drives learning-rate schedules), epoch and batch.

Keras's own `keras.callbacks.BackupAndRestore` saves `model.save_weights`,
which for a parallel model is the template's weights only, so a restart with
any optimizer but plain SGD trained on from fresh optimizer state (issue 12);
it also replays an interrupted epoch from its start. Here a backup holds
every variable of the model and of its optimizer, and with
`save_freq=N` batches a run killed mid-epoch skips the batches already
trained in the resumed epoch. With `shuffle=False` or a seeded input
pipeline the resumed run trains to the same weights as an uninterrupted one.

Every worker reads the same backup; only the chief writes it, atomically
(a new file renamed over the old one). The backup folder must be visible to
every worker (one machine, or a shared filesystem).
"""

from __future__ import annotations

import json
import os
import tempfile

from absl import logging
import keras
import numpy as np

from parallel_keras import _internals
from parallel_keras.cluster import writes

_LATEST = "latest.npz"
_PREVIOUS = "previous.npz"
_METADATA_KEY = "__metadata__"


class BackupAndRestore(keras.callbacks.Callback):
    """Backs up and restores weights, optimizer state, epoch and batch.

    Args:
        backup_dir: Folder of the backup, shared by all workers.
        save_freq: `"epoch"`, or a number of batches between backups.
            Defaults to `"epoch"`.
        double_checkpoint: Keep the previous backup too, used if the latest
            cannot be read. Defaults to False.
        delete_checkpoint: Delete the backup when training ends normally.
            Defaults to True.

    Raises:
        ValueError: If `save_freq` is neither `"epoch"` nor a positive
            integer, or (when training starts) the backup was written for
            other variables.

    Example:

    >>> import parallel_keras
    >>> backup = parallel_keras.BackupAndRestore("/tmp/backup", save_freq=10)
    >>> # parallel_model.fit(x, y, epochs=5, callbacks=[backup])
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike,
        save_freq: str | int = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
    ):
        super().__init__()
        if save_freq != "epoch" and (
            isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1
        ):
            raise ValueError(
                "save_freq must be 'epoch' or a positive number of batches. "
                f"Received: save_freq={save_freq!r}. Pass e.g. save_freq=10."
            )
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = bool(delete_checkpoint)
        self._epoch = 0
        self._batches_since_backup = 0
        self._steps_to_skip = 0
        self.restored_from: dict | None = None

    @property
    def shared_backup_dir(self) -> str:
        """The folder every worker restores from (the chief's backup)."""
        return self.backup_dir

    # State: every variable of the trained model and of its optimizer.

    def _model_variables(self):
        return list(getattr(self.model, "template", self.model).weights)

    def _optimizer_variables(self):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None:
            return []
        if not optimizer.built:
            with self.model.distribute_strategy.scope():
                optimizer.build(self.model.trainable_variables)
        return list(optimizer.variables)

    def _save(self, epoch: int, batch: int) -> None:
        if not writes.is_chief():
            return  # Reading is local; only the file needs one writer.
        arrays = {}
        for prefix, variables in (
            ("model", self._model_variables()),
            ("optimizer", self._optimizer_variables()),
        ):
            for index, variable in enumerate(variables):
                arrays[f"{prefix}/{index}"] = np.asarray(keras.ops.convert_to_numpy(variable))
        metadata = {"epoch": epoch, "batch": batch}
        arrays[_METADATA_KEY] = np.array(json.dumps(metadata))
        os.makedirs(self.backup_dir, exist_ok=True)
        handle, temp_path = tempfile.mkstemp(
            prefix=".backup.tmp-", suffix=".npz", dir=self.backup_dir
        )
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(file, **arrays)
            latest = os.path.join(self.backup_dir, _LATEST)
            if self.double_checkpoint and os.path.exists(latest):
                os.replace(latest, os.path.join(self.backup_dir, _PREVIOUS))
            os.replace(temp_path, latest)
        except BaseException:
            if os.path.exists(temp_path):
                os.remove(temp_path)
            raise
        logging.info(
            "parallel_keras: backed up epoch %d batch %d to %s", epoch, batch, latest
        )

    def _read(self):
        for name in (_LATEST, _PREVIOUS):
            path = os.path.join(self.backup_dir, name)
            if not os.path.exists(path):
                continue
            try:
                with np.load(path) as stored:
                    return path, {key: stored[key] for key in stored.files}
            except (OSError, ValueError) as error:
                logging.warning(
                    "parallel_keras: cannot read backup %s (%s); trying the previous one.",
                    path,
                    error,
                )
        return None, None

    def _restore(self) -> None:
        path, stored = self._read()
        if stored is None:
            return
        metadata = json.loads(str(stored.pop(_METADATA_KEY)))
        pairs = []
        for prefix, variables in (
            ("model", self._model_variables()),
            ("optimizer", self._optimizer_variables()),
        ):
            saved = sorted(
                (key for key in stored if key.startswith(prefix + "/")),
                key=lambda key: int(key.split("/")[1]),
            )
            shapes = [tuple(stored[key].shape) for key in saved]
            wanted = [tuple(variable.shape) for variable in variables]
            if shapes != wanted:
                raise ValueError(
                    f"The backup in {self.backup_dir} was written for another "
                    f"{prefix}. Received: {len(shapes)} {prefix} variable(s) "
                    f"of shapes {shapes[:4]}... in {path}, and this {prefix} "
                    f"has {len(wanted)} of shapes {wanted[:4]}... Point "
                    "backup_dir to a fresh folder, or delete the old backup."
                )
            pairs.extend(zip(variables, (stored[key] for key in saved)))
        # Every check passed: now change the model, all at once.
        for variable, value in pairs:
            variable.assign(value)
        self._epoch = metadata["epoch"]
        self._steps_to_skip = metadata["batch"]
        self.restored_from = dict(metadata, path=path)
        logging.info(
            "parallel_keras: restored %s: resuming at epoch %d, batch %d.",
            path,
            metadata["epoch"],
            metadata["batch"],
        )

    # Callback hooks.

    def on_train_begin(self, logs=None):
        self._batches_since_backup = 0
        self._steps_to_skip = 0
        self._restore()
        _internals.set_initial_epoch(self.model, self._epoch or None)
        steps_per_execution = int(getattr(self.model, "steps_per_execution", 1) or 1)
        _internals.skip_train_steps(
            self.model, self._steps_to_skip // steps_per_execution
        )

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._steps_to_skip:
            if batch + 1 >= self._steps_to_skip:
                self._steps_to_skip = 0
            return  # A skipped batch: already in the restored state.
        if self.save_freq == "epoch":
            return
        self._batches_since_backup += 1
        if self._batches_since_backup >= self.save_freq:
            self._batches_since_backup = 0
            steps = (self.params or {}).get("steps")
            if steps is not None and batch + 1 >= steps:
                self._save(self._epoch + 1, 0)
            else:
                self._save(self._epoch, batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0)

    def on_train_end(self, logs=None):
        _internals.set_initial_epoch(self.model, None)
        if self.delete_checkpoint and writes.is_chief():
            if not os.path.isdir(self.backup_dir):
                return
            for name in os.listdir(self.backup_dir):
                # Also temporary files of a chief killed while writing.
                if name in (_LATEST, _PREVIOUS) or name.startswith(".backup.tmp-"):
                    os.remove(os.path.join(self.backup_dir, name))
            try:
                os.rmdir(self.backup_dir)
            except OSError:
                pass
