"""Checkpoint writing and legacy HDF5 weights (issue 3).

Upstream surface: `keras.callbacks.ModelCheckpoint`'s private `_save_model`,
`_get_file_path` and `_should_save_model`, and
`keras.src.legacy.saving.legacy_h5_format.save_weights_to_hdf5_group`.

Checked on TensorFlow 2.21.0 with Keras 3.15.1; `tests/internals/
test_checkpoints.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

import keras


# --- Checkpoint writing and legacy HDF5 weights (issue 3) -----------------
#
# `keras.callbacks.ModelCheckpoint` writes in its private `_save_model(epoch,
# batch, logs)`, after `_get_file_path` formats the path and
# `_should_save_model` applies `save_best_only`/`monitor`/`mode`. Overriding
# that one method routes the write through parallel_keras (atomic, through
# the template) while keeping Keras' own monitor logic and messages.
# Keras 3 refuses `save_weights("x.h5")`, but still loads the legacy layout
# (layer_names / weight_names) that `legacy_h5_format.
# save_weights_to_hdf5_group` writes; Keras 2 checkpoint code uses `.h5`.
# Checked on TF 2.21 / Keras 3.15.


class ModelCheckpointWriteHook(keras.callbacks.ModelCheckpoint):
    """A stock ModelCheckpoint whose file write calls `write_checkpoint`."""

    def _save_model(self, epoch, batch, logs):
        filepath = self._get_file_path(epoch, batch, logs)
        if self._should_save_model(epoch, batch, logs, filepath):
            self.write_checkpoint(filepath, epoch=epoch)

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        raise NotImplementedError


def save_legacy_h5_weights(h5_group: object, model: keras.Model) -> None:
    """Writes `model`'s weights in the Keras 2 layout into an open h5py group."""
    from keras.src.legacy.saving import legacy_h5_format  # pylint: disable=g-direct-keras-import

    legacy_h5_format.save_weights_to_hdf5_group(h5_group, model)
