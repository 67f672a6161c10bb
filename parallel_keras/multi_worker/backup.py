# SPDX-License-Identifier: Apache-2.0
"""Recovery from a lost worker: the whole training state, backed up and restored.

`parallel-keras launch --max-restarts K` restarts the group when a worker
dies. With this callback in `fit`, the restarted group resumes where the last
backup left it: model weights, optimizer state (Adam's moments, momentum,
gradient accumulators, the step count that drives learning-rate schedules),
epoch and the rows of it already trained.

Keras's own `keras.callbacks.BackupAndRestore` saves `model.save_weights`,
which for a parallel model is the template's weights only, so a restart with
any optimizer but plain SGD trained on from fresh optimizer state;
it also replays an interrupted epoch from its start. Here a backup holds
every variable of the model and of its optimizer, and with
`save_freq=N` batches a run killed mid-epoch skips the rows already trained
in the resumed epoch. With `shuffle=False` or a seeded input pipeline the
resumed run trains to the same weights as an uninterrupted one.

A backup records the global batch and the replicas that wrote it, so it
restores on another replica or worker count. Resumed with the same
global batch kept through gradient accumulation (4 replicas x 32 rows, then
2 replicas x 32 rows x 2 steps), the run trains to the uninterrupted run's
weights: the step count is converted so `optimizer.iterations` stays the
number of updates, as Keras counts them. A changed global batch is logged,
and the resumed epoch skips the rows already trained, not the batches.

Every worker reads the same backup; only the chief writes it, atomically
(a new file renamed over the old one). The backup folder must be visible to
every worker (one machine, or a shared filesystem). A backup that exists but
cannot be read is an error (or, with `double_checkpoint=True`, the previous
backup is restored), never a silent fresh start.

A backup never replaces a finite state with a non-finite one (a NaN row,
an overflow): that state is not written, the last finite backup stays and
is kept when training ends, and a warning says so once per `fit`
(see `saving.finite`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import zipfile
from collections.abc import Callable
from typing import Any, Literal

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from parallel_keras import _internals
from parallel_keras._internals import compiled_functions, loss_tracking
from parallel_keras.cluster import writes
from parallel_keras.data_parallel import accumulation, batches
from parallel_keras.saving import files, finite, paths

_LATEST = "latest.npz"
_PREVIOUS = "previous.npz"
_METADATA_KEY = "__metadata__"
_FORMAT = 2
# What a backup that cannot be read raises while being opened.
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, MemoryError)
# A stored array may declare this many times the bytes of the model's
# largest variable (all of them: its whole state), plus the slack: a backup
# of another model still reaches the shape comparison that names it; a
# member declaring 10**11 rows is refused before it is read.
_DECLARED_FACTOR = 16
_DECLARED_SLACK = 64 * 2**20
_METADATA_BYTES = 2**20


class BackupAndRestore(keras.callbacks.Callback):
    """Backs up and restores weights, optimizer state, epoch and rows trained.

    Args:
        backup_dir: Folder of the backup, shared by all workers.
        save_freq: `"epoch"`, or a number of batches between backups.
            Defaults to `"epoch"`.
        double_checkpoint: Keep the previous backup too, used if the latest
            cannot be read. Defaults to False.
        delete_checkpoint: Delete the backup when training ends normally
            (it is kept when a non-finite state was refused). Defaults to
            True.

    Raises:
        ValueError: If `save_freq` is neither `"epoch"` nor a positive
            integer, or (when training starts) `backup_dir` cannot be
            written, the backup was written for other variables, or it
            exists but cannot be read.
        RuntimeError: If a backup cannot be written (a full disk); the
            previous backup is left as it was.

    Example:

    >>> import parallel_keras
    >>> backup = parallel_keras.BackupAndRestore("/tmp/backup", save_freq=10)
    >>> # parallel_model.fit(x, y, epochs=5, callbacks=[backup])
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike,
        save_freq: Literal["epoch"] | int = "epoch",
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
        self._skipping = False
        self._rows_skipped = 0
        self._global_batch: int | None = None
        self._old_global_batch: int | None = None
        self._skipping_batches = 0
        self._count_rows: Callable[[Any], Any] | None = None
        self.restored_from: dict | None = None
        self._finite = finite.FiniteGuard("backup")

    @property
    def shared_backup_dir(self) -> str:
        """The folder every worker restores from (the chief's backup)."""
        return self.backup_dir

    # --- State: every variable of the trained model and of its optimizer ---

    def _inner_optimizer(self):
        optimizer = getattr(self.model, "optimizer", None)
        return None if optimizer is None else accumulation.inner_optimizer(optimizer)

    def _state(self) -> dict[str, list]:
        """Variables by part. The step counter and the accumulators are kept
        apart: their meaning depends on the accumulation steps."""
        template: keras.Model = getattr(self.model, "template", self.model)
        model = list(template.weights)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None:
            return {"model": model, "optimizer": [], "accumulator": []}
        if not optimizer.built:
            with self.model.distribute_strategy.scope():
                optimizer.build(self.model.trainable_variables)
        inner = self._inner_optimizer()
        accumulators = _internals.gradient_accumulators(inner, self.model.trainable_variables) or []
        apart = {id(v) for v in accumulators} | {id(_internals.micro_step_counter(inner))}
        rest = [v for v in optimizer.variables if id(v) not in apart]
        return {"model": model, "optimizer": rest, "accumulator": accumulators}

    def _steps(self) -> int:
        return accumulation.accumulation_steps(getattr(self.model, "optimizer", None)) or 1

    # --- Writing -------------------------------------------------------------

    def _save(self, epoch: int, batch: int, rows: int | None, logs=None) -> None:
        if not writes.is_chief():
            return  # Reading is local; only the file needs one writer.
        arrays = {}
        names = {}
        for part, variables in self._state().items():
            for index, variable in enumerate(variables):
                arrays[f"{part}/{index}"] = np.asarray(keras.ops.convert_to_numpy(variable))
                names[f"{part}/{index}"] = f"{part} variable {variable.path!r}"
        latest = os.path.join(self.backup_dir, _LATEST)
        if self._finite.refuses(
            logs,
            ((names[key], value) for key, value in arrays.items()),
            latest if os.path.exists(latest) else f"{self.backup_dir} (no backup yet)",
            f"epoch {epoch} batch {batch}",
        ):
            return
        inner = self._inner_optimizer()
        metadata = {
            "format": _FORMAT,
            "epoch": epoch,
            "batch": batch,
            "rows": rows,
            "global_batch": self._global_batch,
            "replicas": self.model.distribute_strategy.num_replicas_in_sync,
            "accumulation_steps": self._steps(),
            "micro_steps": (
                int(keras.ops.convert_to_numpy(_internals.micro_step_counter(inner)))
                if inner is not None
                else 0
            ),
        }
        arrays[_METADATA_KEY] = np.array(json.dumps(metadata))
        self._check_folder()
        temp_path = None
        try:
            handle, temp_path = tempfile.mkstemp(
                prefix=".backup.tmp-", suffix=".npz", dir=self.backup_dir
            )
            with os.fdopen(handle, "wb") as file:
                # Without pickles, as the restore reads them (np.load's allow_pickle=False).
                np.savez(file, allow_pickle=False, **arrays)
            if self.double_checkpoint and os.path.exists(latest):
                os.replace(latest, os.path.join(self.backup_dir, _PREVIOUS))
            os.replace(temp_path, latest)
        except OSError as error:
            raise RuntimeError(
                "A backup is written whole or not at all, and this one could "
                f"not be written, so {latest} still holds the last backup. "
                f"Received: {error.strerror or error} while writing {latest} "
                f"(epoch {epoch}, batch {batch}). Free space on the disk of "
                f"{self.backup_dir} (or raise the file-size limit), or pass "
                "another backup_dir."
            ) from None
        finally:
            if temp_path is not None and os.path.exists(temp_path):
                os.remove(temp_path)
        logging.info("parallel_keras: backed up epoch %d batch %d to %s", epoch, batch, latest)

    def _check_folder(self) -> None:
        """`backup_dir` is (or can become) a folder this process can write."""
        folder = self.backup_dir
        if os.path.exists(folder) and not os.path.isdir(folder):
            blocker = folder
        else:
            blocker = None if os.path.isdir(folder) else paths.first_file_ancestor(folder)
        if blocker is not None:
            raise ValueError(
                "Backups need a folder this process can write. Received: "
                f"backup_dir={folder!r}, and {blocker!r} is a regular file, not "
                "a folder. Pass a backup_dir whose folders are folders, or move "
                "that file away."
            )
        if not writes.is_chief():
            return
        if os.path.isdir(folder) and paths.read_only(folder):
            raise ValueError(
                "Backups need a folder this process can write. Received: "
                f"backup_dir={folder!r}, which is read-only. Pass a writable "
                f"backup_dir, or chmod u+w {folder}."
            )
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise ValueError(
                "Backups need a folder this process can write. Received: "
                f"backup_dir={folder!r}, which cannot be created "
                f"({error.strerror or error}). Pass a backup_dir in a writable "
                "folder."
            ) from None

    # --- Reading -------------------------------------------------------------

    def _read(self, largest: int, total: int):
        """`(path, arrays, metadata)` of the newest readable backup, or None.

        Each file is checked before its arrays are read: a regular file
        (a named pipe would block forever), arrays of numbers whose declared
        sizes fit this model (`largest` bytes for one variable, `total` for
        all, with slack), and metadata whose every field is valid.
        """
        failures = []
        for name in (_LATEST, _PREVIOUS):
            path = os.path.join(self.backup_dir, name)
            if not os.path.exists(path):
                continue
            try:
                try:
                    files.require_regular_file(path, "backup file")
                except ValueError as error:
                    raise _Refused(str(error)) from None
                _check_declared(path, largest, total)
                with np.load(path, allow_pickle=False) as stored:
                    if _METADATA_KEY not in stored.files:
                        raise KeyError(f"no {_METADATA_KEY!r} entry: not a parallel_keras backup")
                    arrays = {key: stored[key] for key in stored.files}
                metadata = _validated(json.loads(str(arrays.pop(_METADATA_KEY))))
            except _UNREADABLE as error:
                failures.append(f"{path} ({_describe(error)})")
                continue
            if failures:
                logging.warning(
                    "parallel_keras: cannot read the backup %s; restoring the previous one, %s.",
                    failures[0],
                    path,
                )
            return path, arrays, metadata
        if failures:
            raise ValueError(
                "A backup that exists must be restored, or training would "
                "start over and replace it: it cannot be read. Received: "
                + " and ".join(failures)
                + ". Restore the file from a copy, or delete it (or pass a "
                "fresh backup_dir) to train from the start."
            )
        return None

    def _restore(self) -> None:
        state = self._state()
        sizes = [_nbytes(v) for part in state.values() for v in part]
        found = self._read(max(sizes, default=0), sum(sizes))
        if found is None:
            return
        path, stored, metadata = found
        if metadata.get("format") == _FORMAT:
            pairs = self._matched("model", state["model"], stored, path)
            pairs += self._matched("optimizer", state["optimizer"], stored, path)
        else:  # Written by 0.1.0: every optimizer variable, in order.
            optimizer = getattr(self.model, "optimizer", None)
            pairs = self._matched("model", state["model"], stored, path)
            pairs += self._matched(
                "optimizer", list(optimizer.variables) if optimizer else [], stored, path
            )
        counter_value, accumulators = self._converted_steps(metadata, stored, state, path)
        # Every check passed: now change the model, all at once.
        for variable, value in pairs:
            variable.assign(value)
        inner = self._inner_optimizer()
        if inner is not None and counter_value is not None:
            _internals.micro_step_counter(inner).assign(counter_value)
        for variable, value in accumulators:
            variable.assign(value)
        self._epoch = metadata["epoch"]
        self._old_global_batch = metadata.get("global_batch")
        self.restored_from = dict(metadata, path=path)
        logging.info(
            "parallel_keras: restored %s: resuming at epoch %d, batch %d "
            "(%s rows of it trained, global batch %s, written by %s replica(s) "
            "x %s accumulation step(s)).",
            path,
            metadata["epoch"],
            metadata["batch"],
            metadata.get("rows"),
            metadata.get("global_batch"),
            metadata.get("replicas"),
            metadata.get("accumulation_steps", 1),
        )

    def _matched(self, part, variables, stored, path):
        saved = sorted(
            (key for key in stored if key.startswith(part + "/")),
            key=lambda key: int(key.split("/")[1]),
        )
        shapes = [tuple(stored[key].shape) for key in saved]
        wanted = [tuple(variable.shape) for variable in variables]
        if shapes != wanted:
            raise ValueError(
                f"The backup in {self.backup_dir} was written for another "
                f"{part}. Received: {len(shapes)} {part} variable(s) "
                f"of shapes {shapes[:4]}... in {path}, and this {part} "
                f"has {len(wanted)} of shapes {wanted[:4]}... Point "
                "backup_dir to a fresh folder, or delete the old backup."
            )
        return list(zip(variables, (stored[key] for key in saved)))

    def _converted_steps(self, metadata, stored, state, path):
        """The step counter and accumulators for this run's accumulation steps.

        Keras counts batches in the private counter and reports `iterations`
        = counter // steps (the updates). A backup at an update boundary
        continues with any steps; one taken between updates only with the
        steps that wrote it.
        """
        if metadata.get("format") != _FORMAT or self._inner_optimizer() is None:
            return None, []
        old_steps = int(metadata.get("accumulation_steps", 1))
        new_steps = self._steps()
        updates, partial = divmod(int(metadata.get("micro_steps", 0)), old_steps)
        if partial and old_steps != new_steps:
            raise ValueError(
                "A backup taken between two updates (some gradients "
                "accumulated, not yet applied) resumes only with the "
                "accumulation steps that wrote it. Received: "
                f"{path} with {partial} of gradient_accumulation_steps="
                f"{old_steps} batches accumulated, and an optimizer with "
                f"gradient_accumulation_steps={new_steps if new_steps > 1 else None}. "
                f"Resume with gradient_accumulation_steps={old_steps}, or "
                f"back up at updates (save_freq a multiple of {old_steps})."
            )
        accumulators = []
        if partial:
            accumulators = self._matched("accumulator", state["accumulator"], stored, path)
        else:
            accumulators = [
                (v, np.zeros(v.shape, keras.backend.standardize_dtype(v.dtype)))
                for v in state["accumulator"]
            ]
        if old_steps != new_steps:
            logging.info(
                "parallel_keras: the backup updated every %d batch(es), this "
                "run every %d: %d update(s) so far, kept as the optimizer's "
                "iterations.",
                old_steps,
                new_steps,
                updates,
            )
        return updates * new_steps + partial, accumulators

    # --- Skipping the rows already trained -----------------------------------

    def _rows_this_epoch(self) -> int | None:
        """Rows trained in this epoch (Keras's loss tracker weighs by rows)."""
        tracker = loss_tracking.loss_tracker(self.model)
        if tracker is None:
            return None
        count = keras.ops.convert_to_numpy(tracker.count)
        return self._rows_skipped + int(round(float(count)))

    def _batch_rows(self, data) -> int:
        """Rows of one distributed batch, each counted once."""
        strategy = self.model.distribute_strategy

        def local(batch):
            step = batches.unpack(batch)
            x, keep = step.x, step.keep
            if keep is not None:
                return tf.reduce_sum(tf.cast(keep > 0, tf.int64))
            for value in tf.nest.flatten(x):
                if value is not None and value.shape.rank:
                    return tf.cast(tf.shape(value)[0], tf.int64)
            return tf.constant(0, tf.int64)

        if self._count_rows is None:
            self._count_rows = tf.function(
                lambda batch: strategy.reduce(
                    tf.distribute.ReduceOp.SUM, strategy.run(local, args=(batch,)), axis=None
                )
            )
        return int(self._count_rows(data))

    def _skipped(self, rows: int, batches_skipped: int) -> None:
        self._skipping = False
        self._rows_skipped = rows
        self._global_batch = rows // batches_skipped
        wanted = (self.restored_from or {}).get("rows")
        if self._old_global_batch not in (None, self._global_batch):
            logging.warning(
                "parallel_keras: the global batch changed from %d rows (the "
                "backup's) to %d: resuming after %d rows of epoch %d "
                "(%d batch(es) of %d).",
                self._old_global_batch,
                self._global_batch,
                rows,
                self._epoch,
                batches_skipped,
                self._global_batch,
            )
        if wanted is not None and rows > wanted:
            logging.warning(
                "parallel_keras: the backup had trained %d rows of epoch %d, "
                "not a whole number of batches of %d rows: skipped %d rows, so "
                "%d row(s) are not trained this epoch.",
                wanted,
                self._epoch,
                self._global_batch,
                rows,
                rows - wanted,
            )

    def _measure_global_batch(self, batch: int) -> None:
        """The global batch from the rows of the first batches trained (a
        resume mid-epoch learns it in `_skipped`); logs a change."""
        rows = self._rows_this_epoch()
        if rows is None:
            return
        self._global_batch = rows // (batch + 1)
        if self._old_global_batch not in (None, self._global_batch):
            logging.warning(
                "parallel_keras: the global batch changed from %d rows (the backup's) to %d.",
                self._old_global_batch,
                self._global_batch,
            )

    # --- Callback hooks ------------------------------------------------------

    def on_train_begin(self, logs=None):
        self._batches_since_backup = 0
        self._skipping = False
        self._rows_skipped = 0
        self._epoch = 0
        self._global_batch = None
        self._skipping_batches = 0
        self._count_rows = None
        self._finite.reset()
        self._check_folder()
        self._restore()
        compiled_functions.set_initial_epoch(self.model, self._epoch or None)
        restored = self.restored_from or {}
        rows, batch = restored.get("rows"), restored.get("batch", 0)
        if not batch:
            return
        if rows is None:  # A backup without rows: by batches, as written.
            steps_per_execution = int(getattr(self.model, "steps_per_execution", 1) or 1)
            compiled_functions.skip_train_steps(self.model, batch // steps_per_execution)
            self._skipping_batches = batch
            return
        self._skipping = True
        compiled_functions.skip_train_rows(self.model, rows, self._batch_rows, self._skipped)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if not self._skipping:
            self._rows_skipped = 0

    def on_train_batch_end(self, batch, logs=None):
        if self._skipping:
            return  # A skipped batch: already in the restored state.
        if self._skipping_batches:
            if batch + 1 >= self._skipping_batches:
                self._skipping_batches = 0
            return
        if self._global_batch is None:
            self._measure_global_batch(batch)
        if self.save_freq == "epoch":
            return
        self._batches_since_backup += 1
        if self._batches_since_backup >= self.save_freq:
            self._batches_since_backup = 0
            steps = (self.params or {}).get("steps")
            if steps is not None and batch + 1 >= steps:
                self._save(self._epoch + 1, 0, 0, logs)
            else:
                self._save(self._epoch, batch + 1, self._rows_this_epoch(), logs)

    def on_epoch_end(self, epoch, logs=None):
        self._rows_skipped = 0
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0, 0, logs)

    def on_train_end(self, logs=None):
        compiled_functions.set_initial_epoch(self.model, None)
        if self._finite.refused and writes.is_chief():
            # The run did not end well: its last finite state is what a
            # resume needs, so it is kept whatever delete_checkpoint says.
            logging.warning(
                "parallel_keras: kept the backup in %s (the last finite "
                "state): %d non-finite state(s) were not backed up.",
                self.backup_dir,
                self._finite.refused,
            )
            return
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


class _Refused(ValueError):
    """A backup refused by its own checks; the message says why."""


def _describe(error: BaseException) -> str:
    if isinstance(error, _Refused):
        return str(error)
    if isinstance(error, zipfile.BadZipFile):
        return f"not a complete .npz archive: {error}"
    if isinstance(error, KeyError):
        return str(error.args[0]) if error.args else "a missing entry"
    return f"{type(error).__name__}: {error}"


def _nbytes(variable) -> int:
    try:
        itemsize = np.dtype(keras.backend.standardize_dtype(variable.dtype)).itemsize
    except TypeError:  # A dtype NumPy does not name (bfloat16): at most 8 bytes.
        itemsize = 8
    return math.prod(int(d) for d in variable.shape) * itemsize


def _check_declared(path: str, largest: int, total: int) -> None:
    """Reads only the `.npy` headers of a backup: numbers, of sizes that fit.

    `np.load` allocates what a member declares before reading its bytes, so
    a member declaring shape (10**11,) over 16 bytes of data is a
    MemoryError; checked here from the headers, nothing is allocated.
    """
    declared = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            key = info.filename.removesuffix(".npy")
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
            size = math.prod(shape) * dtype.itemsize
            if key == _METADATA_KEY:
                if dtype.kind != "U" or shape != () or size > _METADATA_BYTES:
                    raise _Refused(
                        f"its {_METADATA_KEY!r} entry must be one JSON string, "
                        f"and holds {dtype} of shape {shape}"
                    )
                continue
            if dtype.kind not in "biufc":
                raise _Refused(
                    f"entry {key!r} holds {dtype} values, not numbers: no variable can take them"
                )
            declared += size
            if size > _DECLARED_FACTOR * largest + _DECLARED_SLACK or declared > (
                _DECLARED_FACTOR * total + _DECLARED_SLACK
            ):
                raise _Refused(
                    f"entry {key!r} declares shape {shape} of {dtype} "
                    f"({size} bytes), far more than this model's state "
                    f"({total} bytes, the largest variable {largest}); it was "
                    "not read"
                )


# Metadata field -> (required, may be None, smallest value).
_FIELDS = {
    "format": (False, False, 1),
    "epoch": (True, False, 0),
    "batch": (False, False, 0),
    "rows": (False, True, 0),
    "global_batch": (False, True, 1),
    "replicas": (False, True, 1),
    "accumulation_steps": (False, False, 1),
    "micro_steps": (False, False, 0),
}


def _validated(metadata: Any) -> dict:
    """The backup's metadata, every field checked before the model is touched."""
    if not isinstance(metadata, dict):
        raise _Refused(
            f"its metadata must be a JSON object of {sorted(_FIELDS)}, and is "
            f"{type(metadata).__name__} {metadata!r:.80}"
        )
    for field, (required, nullable, smallest) in _FIELDS.items():
        if field not in metadata:
            if required:
                raise _Refused(f"its metadata has no {field!r}")
            continue
        value = metadata[field]
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < smallest:
            raise _Refused(
                f"its metadata field {field!r} must be an integer >= {smallest}"
                f"{' or null' if nullable else ''}, and holds {value!r:.80}"
            )
    return metadata
