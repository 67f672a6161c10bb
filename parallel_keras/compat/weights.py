# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `save_weights`/`load_weights` to any path, in Keras 2's HDF5 layout.

Keras 2 wrote weights as HDF5 whatever the path (`w.h5`, `w.hdf5`,
`'%s/epoch_%d' % (out, epoch)`, a path from the command line); Keras 3's
`save_weights` takes only `.weights.h5`. These write the file Keras 2 wrote,
at the path given (`layer_names` / `weight_names` attributes, one group per
layer), which Keras 2, `tf_keras` and Keras 3's `load_weights` read, and
read back either layout.
"""

from __future__ import annotations

import os
from typing import Any

import keras
from absl import logging

from parallel_keras import _internals
from parallel_keras.cluster import writes
from parallel_keras.saving import atomic, matching, paths
from parallel_keras.saving import weights as weights_lib


def save_weights(
    model: keras.Model,
    filepath: str | os.PathLike,
    overwrite: bool = True,
    save_format: Any = None,
    **kwargs: Any,
) -> None:
    """Keras 2's `model.save_weights(filepath)`: HDF5 at exactly `filepath`.

    A `.weights.h5` path is written by Keras 3; any other path (`.h5`,
    `.hdf5`, no suffix, a suffix computed at run time) gets Keras 2's HDF5
    layout, atomically. A `multi_gpu_model` result saves its template.
    Modernise: save to a path ending in `.weights.h5` with
    `model.save_weights`.

    Args:
        model: A Keras model or a parallel model.
        filepath: Where to write.
        overwrite: Replace an existing file. Defaults to True.
        save_format: Keras 2's format argument; HDF5 is written whatever it
            says, as standalone Keras 2 did. Defaults to None.
        **kwargs: Ignored Keras 2 arguments.

    Raises:
        FileExistsError: With overwrite=False and an existing file.

    Example:

    >>> import keras, os, tempfile
    >>> from parallel_keras import compat
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> compat.save_weights(model, os.path.join(tempfile.mkdtemp(), "epoch_3"))
    """
    del save_format, kwargs
    if os.fspath(filepath).endswith(paths.WEIGHTS_SUFFIXES):
        atomic.save_weights(model, filepath, overwrite=overwrite)
        return
    path = writes.write_path(os.fspath(filepath))
    if not overwrite and os.path.exists(path):
        raise FileExistsError(
            "save_weights will not replace an existing file with overwrite=False. "
            f"Received: filepath={path!r}, which exists. Pass overwrite=True or another path."
        )
    target = atomic.saving_target(model)
    image = atomic._hdf5_image(lambda file: _internals.save_legacy_h5_weights(file, target))
    with atomic.atomic_path(path) as temporary:
        atomic._write_bytes(temporary, image)
    logging.info("Saved weights of %s to %s (Keras 2 HDF5 layout)", target.name, path)


def load_weights(
    model: keras.Model,
    filepath: str | os.PathLike,
    by_name: bool = False,
    skip_mismatch: bool = False,
    **kwargs: Any,
) -> list[str]:
    """Keras 2's `model.load_weights(filepath, by_name=...)`, from any path.

    Reads Keras 2 / `tf_keras` HDF5 files (whatever the suffix) and Keras 3
    `.weights.h5` files and `.keras` archives, with `parallel_keras.load_weights`.
    Modernise: `model.load_weights(path)` on a `.weights.h5` path.

    Args:
        model: A Keras model or a parallel model (loads into its template).
        filepath: The file.
        by_name: Load the layers whose names are in the file (HDF5 only);
            as in Keras 2, a file with no layer of the model's names loads
            nothing (with a warning), without an error. Defaults to False.
        skip_mismatch: Skip layers whose shapes differ. Defaults to False.
        **kwargs: Ignored Keras 2 arguments (`reshape=`).

    Returns:
        The names of the layers that received weights.
    """
    del kwargs
    try:
        return weights_lib.load_weights(
            model, os.fspath(filepath), by_name=by_name, skip_mismatch=skip_mismatch
        )
    except matching.NothingMatchedError as error:
        if not by_name:
            raise
        # Keras 2's by_name load skipped every file layer without a namesake
        # in the model, silently, also when that was all of them.
        logging.warning("load_weights(by_name=True) loaded nothing: %s", error)
        return []
