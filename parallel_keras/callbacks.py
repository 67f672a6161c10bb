# SPDX-License-Identifier: Apache-2.0
"""Callbacks with Keras 2's semantics: checkpoints and early stopping.

`ModelCheckpoint` is Keras 3's callback with the Keras 2 signature
(`period` in 7th place) so legacy callback code runs unchanged; every file
is written atomically, the folder is checked before training starts, and a
`ParallelModel` is saved through its template. `ParallelModelCheckpoint` is
the class the legacy tutorials define by hand, with their exact signature.
`EarlyStopping` stops when Keras 2's did (its `baseline`, `patience=0`,
`mode='auto'` and `restore_best_weights` differ in Keras 3).
"""

from __future__ import annotations

import os
from typing import Any

import keras
import numpy as np
from absl import logging

from parallel_keras import _internals
from parallel_keras.saving import atomic, finite

# Keras 3's constructor validates the suffix for its own formats only; the
# real path (possibly `.hdf5`, as in legacy scripts) is validated here.
_PLACEHOLDER_WEIGHTS = "placeholder.weights.h5"
_PLACEHOLDER_MODEL = "placeholder.keras"
_WEIGHTS_SUFFIXES = (".weights.h5", ".h5", ".hdf5")
_MODEL_SUFFIXES = (".keras", ".h5", ".hdf5")
# tf.keras's `save_format="tf"` suffixes: a SavedModel folder, not a file.
_SAVED_MODEL_SUFFIXES = (".tf", ".pb")


def keras3_checkpoint_path(filepath: str, save_weights_only: bool) -> str:
    """The path a checkpoint writes for a Keras 2 `filepath`.

    Keras 2 saved under any name (HDF5, or a TF checkpoint or SavedModel for
    `tf.keras` without an `.h5` suffix); Keras 3 writes only `.weights.h5`,
    `.keras` and the legacy `.h5`/`.hdf5`. A path Keras 3 can write is kept;
    any other gets the Keras 3 suffix appended (`w-{epoch}.ckpt` ->
    `w-{epoch}.ckpt.weights.h5`, `model` -> `model.keras`), so paths computed
    at run time work as they did.

    Args:
        filepath: The path given to the checkpoint, may contain `{epoch}`.
        save_weights_only: Whether only the weights are saved.

    Returns:
        The path to write.

    Raises:
        ValueError: For a Keras 3 suffix of the other kind (`.keras` with
            `save_weights_only=True`, `.weights.h5` without), which no
            Keras 2 script wrote, or for `.tf`/`.pb`, which asked tf.keras
            for a TensorFlow SavedModel, a format Keras 3 checkpoints
            cannot write.

    Example:

    >>> keras3_checkpoint_path("ckpt/w-{epoch:02d}.ckpt", save_weights_only=True)
    'ckpt/w-{epoch:02d}.ckpt.weights.h5'
    """
    saved_model = next((s for s in _SAVED_MODEL_SUFFIXES if filepath.endswith(s)), None)
    if saved_model is not None:
        stem = filepath[: -len(saved_model)]
        right = f"{stem}.weights.h5" if save_weights_only else f"{stem}.keras"
        raise ValueError(
            f"Keras 3 checkpoints are `.keras` or `.weights.h5` files; the "
            f"{saved_model} suffix asked tf.keras for a TensorFlow SavedModel, "
            f"which Keras 3 cannot write as a checkpoint. Received: "
            f"filepath={filepath!r}. Pass filepath={right!r} (and load it "
            "with keras.models.load_model or load_weights), or export a "
            "SavedModel for serving after training with model.export(...)."
        )
    wrong = ".keras" if save_weights_only else ".weights.h5"
    if filepath.endswith(wrong):
        raise ValueError(
            f"A checkpoint path must not end in {wrong} when save_weights_only="
            f"{save_weights_only}. Received: filepath={filepath!r}. Use "
            f"{'.weights.h5' if save_weights_only else '.keras'} (or pass "
            f"save_weights_only={not save_weights_only})."
        )
    suffixes = _WEIGHTS_SUFFIXES if save_weights_only else _MODEL_SUFFIXES
    if filepath.endswith(suffixes):
        return filepath
    written = filepath + suffixes[0]
    logging.warning(
        "Keras 3 cannot write checkpoints named %r; writing %r instead.",
        filepath,
        written,
    )
    return written


def _keras2_monitor(mode: str, monitor: str, best: Any) -> tuple[Any, Any]:
    """Keras 2's (monitor_op, best) for a mode: 'auto' is greater for accuracies."""
    greater = mode == "max" or (
        mode not in ("min", "max") and ("acc" in monitor or monitor.startswith("fmeasure"))
    )
    if best is None:
        best = -np.inf if greater else np.inf
    return (np.greater if greater else np.less), best


class ModelCheckpoint(_internals.ModelCheckpointWriteHook):
    """Saves the model or its weights during `fit`; Keras 2 and 3 arguments.

    Behaves as `keras.callbacks.ModelCheckpoint` (formatted paths such as
    `"{epoch:02d}-{val_loss:.4f}.keras"`, `save_best_only`, `monitor`,
    `mode`, `save_freq`), plus:

    * `period`: the Keras 2 argument, in its Keras 2 position: save every
      `period` epochs.
    * Every file is written to a temporary file in the same folder and
      renamed into place, so a process killed mid-save leaves the previous
      checkpoint intact.
    * The folder is created and checked for writing when training starts,
      not after the first epoch.
    * A `ParallelModel` is saved through its template (or through `template`
      when given: the template, or another model built from its layers,
      such as an inference model), so every file loads on one device.
    * `.h5`/`.hdf5` paths work with `save_weights_only=True` (legacy layout).
    * Any other suffix Keras 2 accepted (`.ckpt`, `.model`, none) gets the
      Keras 3 one appended, see `keras3_checkpoint_path`.
    * A non-finite state (a NaN or infinite loss or weight) is never
      written: the file keeps its last finite content, and a warning says
      so once per `fit`.

    Args:
        filepath: Path of the file, may contain `{epoch}` and log fields.
        monitor: The quantity `save_best_only` compares. Defaults to
            "val_loss".
        verbose: 1 prints a line per save. Defaults to 0.
        save_best_only: Save only when `monitor` improves. Defaults to False.
        save_weights_only: Save weights (`.weights.h5`, `.h5`) instead of
            the whole model (`.keras`, `.h5`). Defaults to False.
        mode: "auto", "min" or "max". Defaults to "auto".
        period: Save every `period` epochs (Keras 2). Defaults to 1.
        save_freq: "epoch", or save every this many batches (Keras 3; then
            `period` must be 1). Defaults to "epoch".
        initial_value_threshold: Best value to beat at start. Defaults to
            None.
        template: The model to save instead of the one being trained: the
            template or a model sharing its layers. Defaults to None (the
            trained model, or its template).

    Raises:
        ValueError: If the suffix is `.keras` with `save_weights_only=True`
            or `.weights.h5` without, `period`
            is not a positive int, or, when training starts, the folder is
            not writable.

    Example:

    >>> from parallel_keras.callbacks import ModelCheckpoint
    >>> checkpoint = ModelCheckpoint("ckpt-{epoch:02d}.keras", period=2)
    """

    def __init__(
        self,
        filepath: str | os.PathLike,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        period: int = 1,
        *,
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
        template: keras.Model | None = None,
    ):
        path = keras3_checkpoint_path(os.fspath(filepath), save_weights_only)
        if isinstance(period, bool) or not isinstance(period, int) or period < 1:
            raise ValueError(
                "`period` is the number of epochs between saves, an int >= 1. "
                f"Received: period={period!r}. Pass period=1 to save every "
                "epoch, or period=N for every N epochs."
            )
        if period != 1 and save_freq != "epoch":
            raise ValueError(
                "Pass either `period` (epochs, Keras 2) or an integer "
                "`save_freq` (batches, Keras 3), not both. Received: "
                f"period={period}, save_freq={save_freq!r}."
            )
        super().__init__(
            _PLACEHOLDER_WEIGHTS if save_weights_only else _PLACEHOLDER_MODEL,
            monitor=monitor,
            verbose=verbose,
            save_best_only=save_best_only,
            save_weights_only=save_weights_only,
            mode=mode,
            save_freq=save_freq,
            initial_value_threshold=initial_value_threshold,
        )
        self.filepath = path
        self.period = period
        self.template = template
        # Keras 2's public counter of `period`: its subclasses' on_epoch_end
        # read and reset it (experiencor/keras-yolo3's CustomModelCheckpoint).
        self.epochs_since_last_save = 0
        self._finite = finite.FiniteGuard("checkpoint")
        self._step_logs: dict | None = None

    def on_train_begin(self, logs=None):
        atomic.check_writable_folder(self.filepath)
        self._finite.reset()
        trained = self.model
        if (
            self.template is not None
            and isinstance(getattr(trained, "template", None), keras.Model)
            and not _shares_weights(atomic.saving_target(self.template), trained.template)
        ):
            raise ValueError(
                "A checkpoint's model must share weights with the model being "
                "trained (its template, or a model built from the template's "
                "layers): otherwise it saves weights that fit never changes. "
                f"Received: template {self.template.name!r}, which holds none "
                f"of the weights of {trained.template.name!r}, the model this "
                "parallel model trains. Pass the model given to "
                "multi_gpu_model, or one built from its layers."
            )
        super().on_train_begin(logs)
        overridden = type(self).on_epoch_end is not ModelCheckpoint.on_epoch_end
        if overridden and getattr(self, "monitor_op", None) is None:
            # A Keras 2 subclass's own on_epoch_end reads monitor_op and best,
            # which Keras 2 set at construction (Keras 3 sets them in its
            # on_epoch_end, which such a subclass does not call).
            keras2 = _keras2_monitor(self.mode, self.monitor, getattr(self, "best", None))
            self.monitor_op, self.best = keras2

    def on_epoch_end(self, epoch, logs=None):
        if self.save_best_only and logs and not _names_a_metric(self.monitor, logs):
            # Keras only warns and never saves: the run would end with no
            # checkpoint at all. ('val_x' with 'x' logged may be a skipped
            # validation epoch, validation_freq > 1, so it stays a warning.)
            raise ValueError(
                "save_best_only compares the monitored quantity, and the "
                f"model logs no such metric. Received: monitor={self.monitor!r}; "
                f"the epoch logged {sorted(logs)}. Pass monitor= one of those "
                "(e.g. monitor='loss'), or compile the model with that metric."
            )
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save < self.period:
            return
        self.epochs_since_last_save = 0
        self._step_logs = logs
        super().on_epoch_end(epoch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._step_logs = logs
        super().on_train_batch_end(batch, logs)

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        """Writes one checkpoint atomically, through the template.

        A non-finite state (NaN or inf in the loss or a weight) is not
        written: the file keeps its last finite content.
        """
        target = atomic.saving_target(self.template or self.model)
        if self._finite.refuses(
            self._step_logs,
            ((repr(variable.path), variable.numpy()) for variable in target.weights),
            filepath if os.path.exists(filepath) else f"{filepath} (not written yet)",
            f"epoch {epoch + 1}",
        ):
            return
        folder = os.path.dirname(filepath)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:
            atomic.save_weights(target, filepath, overwrite=True)
        else:
            atomic.save_model(target, filepath, overwrite=True)
        logging.info("Epoch %d: saved %s to %s", epoch + 1, target.name, filepath)


def _shares_weights(saved: keras.Model, trained: keras.Model) -> bool:
    """True if `saved` holds a variable of `trained` (or is it).

    Keras 2 saved any model a checkpoint was given; a model built from the
    template's layers (an inference model, the encoder of an autoencoder)
    shares the trained weights, so its checkpoints change with training.
    """
    if saved is trained:
        return True
    trained_ids = {id(variable) for variable in trained.variables}
    return any(id(variable) in trained_ids for variable in saved.variables)


def _names_a_metric(monitor: str, logs: dict) -> bool:
    return monitor in logs or monitor.removeprefix("val_") in logs


class ParallelModelCheckpoint(ModelCheckpoint):
    """The legacy tutorials' `ParallelModelCheckpoint`: saves the template during `fit`.

    Legacy scripts defined this class by hand to make `ModelCheckpoint` save
    the template instead of the `multi_gpu_model` parallel model. Same
    signature and argument order; `period=N` saves every N epochs, and the
    writes are atomic.

    Args:
        model: The template (the model passed to `multi_gpu_model`).
        filepath: Path of the file, may contain `{epoch}` and log fields.
        monitor: Defaults to "val_loss".
        verbose: Defaults to 0.
        save_best_only: Defaults to False.
        save_weights_only: Defaults to False.
        mode: Defaults to "auto".
        period: Save every `period` epochs. Defaults to 1.

    Raises:
        ValueError: At construction, for a `period` below 1 or a path whose
            suffix is of the other kind (see `keras3_checkpoint_path`); when
            training begins, if the checkpoint folder cannot be created or
            written; at an epoch's end with `save_best_only`, if `monitor`
            names no logged metric.

    Example:

    >>> import keras, parallel_keras
    >>> template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> checkpoint = parallel_keras.ParallelModelCheckpoint(
    ...     template, "unet-{epoch:02d}.hdf5", monitor="val_loss", mode="min")
    """

    def __init__(
        self,
        model: keras.Model,
        filepath: str | os.PathLike,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        period: int = 1,
    ):
        if not isinstance(model, keras.Model):
            raise TypeError(
                "ParallelModelCheckpoint's first argument is the template "
                f"model to save. Received: model of type {type(model).__name__}. "
                "Pass the model given to multi_gpu_model, then the filepath."
            )
        self.single_model = atomic.saving_target(model)
        super().__init__(
            filepath,
            monitor,
            verbose,
            save_best_only,
            save_weights_only,
            mode,
            period,
            template=self.single_model,
        )


class EarlyStopping(keras.callbacks.EarlyStopping):
    """Stops training when the monitored quantity stops improving, as Keras 2 did.

    Keras 2.2.4 and 2.3.1's rules (keras/callbacks.py), where Keras 3.15's
    `keras.callbacks.EarlyStopping` differs:

    * `baseline`: the value to beat. Keras 2 started from it, so an epoch
      that does not beat it counts towards `patience` even if it improves
      on the epochs before: `baseline=0.75, patience=2` on accuracies
      `0.55, 0.74` stops after 2 epochs. Keras 3 resets nothing but also
      never stops while the metric improves, and trains on.
    * `patience=0` stops at the first epoch without improvement, the first
      epoch included (Keras 3 never stops at epoch 0).
    * `mode='auto'` maximizes a quantity whose name contains "acc" and
      minimizes any other (Keras 3 asks the metric for its direction and
      raises for a metric that has none).
    * `restore_best_weights` restores the best epoch's weights when it
      stops training, and only then (Keras 3 also restores them at the end
      of a run it did not stop). If no epoch improved on `baseline`, there
      are no best weights and the weights are left as they are (Keras 2
      failed there).

    Args:
        monitor: The logged quantity to watch. Defaults to "val_loss".
        min_delta: The smallest change that counts as an improvement.
            Defaults to 0.
        patience: Epochs without improvement before stopping. Defaults to 0.
        verbose: 1 logs the epoch training stopped at. Defaults to 0.
        mode: "auto", "min" or "max". Defaults to "auto".
        baseline: The value the quantity must beat, or None. Defaults to
            None.
        restore_best_weights: Restore the best epoch's weights when
            stopping. Defaults to False.

    Example:

    >>> from parallel_keras.callbacks import EarlyStopping
    >>> stop = EarlyStopping(monitor="val_acc", baseline=0.75, patience=2)
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ):
        super().__init__(
            monitor=monitor,
            min_delta=min_delta,
            patience=patience,
            verbose=verbose,
            mode=mode,
            baseline=baseline,
            restore_best_weights=restore_best_weights,
        )
        mode = mode if mode in ("auto", "min", "max") else "auto"  # Keras warned.
        maximize = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.monitor_op: Any = np.greater if maximize else np.less
        # Keras 2 signed `min_delta` as given, without Keras 3's `abs`.
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.best_epoch = epoch
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait < self.patience:
            return
        self.stopped_epoch = epoch
        self.model.stop_training = True
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                logging.info(
                    "Restoring model weights from the end of epoch %d.", self.best_epoch + 1
                )
            self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            logging.info("Epoch %05d: early stopping", self.stopped_epoch + 1)
