# SPDX-License-Identifier: Apache-2.0
"""Checkpoint writing and legacy HDF5 weights.

Upstream surface: `keras.callbacks.ModelCheckpoint`'s private `_save_model`,
`_get_file_path` and `_should_save_model` (3.10+), Callback's `_model`,
`keras.src.legacy.saving.legacy_h5_format.save_weights_to_hdf5_group` and
`save_model_to_hdf5`, and `keras.src.saving.saving_lib.H5IOStore` with
`_save_state` (what `save_weights("x.weights.h5")` runs).

Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3 and 3.15.1 sources (each shape lists
its own); `tests/internals/
test_checkpoints.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

import io
from typing import Any

import keras

# --- Checkpoint writing and legacy HDF5 weights -----------------
#
# `keras.callbacks.ModelCheckpoint` writes in its private `_save_model(epoch,
# batch, logs)`, after `_get_file_path` formats the path and applies
# `save_best_only`/`monitor`/`mode`. Routing only the write through
# parallel_keras (atomic, through the template) keeps Keras' own monitor
# logic and messages. Two upstream shapes, chosen once (below):
# 1. Keras 3.10+ (checked 3.10.0, 3.11.3, 3.15.1): the decision is its own
#    method, `_should_save_model(epoch, batch, logs, filepath)`; overriding
#    `_save_model` calls it, then writes.
# 2. Keras 3.5-3.9 (checked 3.5.0, 3.8.0): `_save_model` decides and writes
#    inline, with `self.model.save(filepath, overwrite=True)` or
#    `self.model.save_weights(filepath, overwrite=True)`. The override runs
#    it with `self.model` (Callback's property over `_model`) answering
#    those two calls with the write.
# Keras 3 refuses `save_weights("x.h5")`, but still loads the legacy layout
# (layer_names / weight_names) that `legacy_h5_format.
# save_weights_to_hdf5_group` writes (same on 3.5.0 to 3.15.1); Keras 2
# checkpoint code uses `.h5`.


class _DecisionMethodHook(keras.callbacks.ModelCheckpoint):
    """Shape 1: Keras's `_should_save_model` decides, then we write."""

    def _save_model(self, epoch, batch, logs):
        filepath = self._get_file_path(epoch, batch, logs)
        if self._should_save_model(epoch, batch, logs, filepath):
            self.write_checkpoint(filepath, epoch=epoch)

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        raise NotImplementedError


class _WriteThroughModel:
    """The callback's model, whose `save`/`save_weights` are the hook's write."""

    def __init__(self, model, write):
        self._wrapped_model = model
        self._write = write

    def save(self, filepath, *args, **kwargs):
        self._write(str(filepath))

    def save_weights(self, filepath, *args, **kwargs):
        self._write(str(filepath))

    def __getattr__(self, name):
        return getattr(self._wrapped_model, name)


class _InlineDecisionHook(keras.callbacks.ModelCheckpoint):
    """Shape 2: Keras's `_save_model` decides inline; its save is our write."""

    _model: Any  # Keras's ModelCheckpoint sets it (`set_model`).

    def _save_model(self, epoch, batch, logs):
        model = self._model
        write_through: _WriteThroughModel

        def write(filepath):
            # `write_checkpoint` sees the real model.
            self._model = model
            try:
                self.write_checkpoint(filepath, epoch=epoch)
            finally:
                self._model = write_through

        write_through = _WriteThroughModel(model, write)
        self._model = write_through
        try:
            super()._save_model(epoch, batch, logs)
        finally:
            self._model = model

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        raise NotImplementedError


def _checkpoint_hook_class() -> type:
    model_checkpoint = keras.callbacks.ModelCheckpoint
    if callable(getattr(model_checkpoint, "_should_save_model", None)):
        return _DecisionMethodHook
    return _InlineDecisionHook


# A stock ModelCheckpoint whose file write calls `write_checkpoint`.
ModelCheckpointWriteHook = _checkpoint_hook_class()


def save_legacy_h5_weights(h5_group: object, model: keras.Model) -> None:
    """Writes `model`'s weights in the Keras 2 layout into an open h5py group."""
    from keras.src.legacy.saving import legacy_h5_format

    legacy_h5_format.save_weights_to_hdf5_group(h5_group, model)


# --- HDF5 built in memory -----------------------------------------
#
# When HDF5 itself writes to a disk that fills up (ENOSPC) or to a process
# over its file-size limit (EFBIG, RLIMIT_FSIZE), the first save fails
# cleanly but leaves the library's state broken: the next save in the same
# process segfaults in `h5py._objects.ObjectID.__dealloc__` (reproduced on
# h5py 3.x / HDF5 1.14 with Keras 3.15, `.h5` and `.weights.h5`). So every
# HDF5 file parallel_keras writes is built in memory, and only its bytes
# reach the disk, through Python's own I/O. Keras offers no public way to
# write `.weights.h5` or a legacy `.h5` model to memory: `save_weights_only`
# insists on a path ending in `.weights.h5` and `save_model` on `.h5`, so the
# steps behind them are called here on an in-memory file. Checked on
# TF 2.21 / Keras 3.15; `tests/internals/test_checkpoints.py` compares the
# bytes' contents with what Keras writes to a path.


def keras_weights_image(model: keras.Model) -> bytes:
    """The bytes of `model.save_weights("x.weights.h5")`, built in memory."""
    from keras.src.saving import saving_lib

    if not model.built:
        # Keras's own check and message (`save_weights_only`).
        raise ValueError(
            "You are saving a model that has not yet been built. Try building "
            "the model first by calling it on some data or by using `build()`."
        )
    buffer = io.BytesIO()
    store = saving_lib.H5IOStore(buffer, mode="w")
    try:
        saving_lib._save_state(
            model,
            weights_store=store,
            assets_store=None,
            inner_path="",
            visited_saveables=set(),
        )
    finally:
        store.close()
    return buffer.getvalue()


def legacy_h5_model_to(h5_file: object, model: keras.Model, include_optimizer: bool) -> None:
    """Writes `model` (config, weights, optimizer) in Keras's legacy `.h5` layout."""
    from keras.src.legacy.saving import legacy_h5_format

    legacy_h5_format.save_model_to_hdf5(model, h5_file, True, include_optimizer)
