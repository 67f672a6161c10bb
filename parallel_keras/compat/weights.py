# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `save_weights`/`load_weights`/`save`/`load_model` at any path, in HDF5.

Keras 2 wrote weights as HDF5 whatever the path (`w.h5`, `w.hdf5`,
`'%s/epoch_%d' % (out, epoch)`, a path from the command line); Keras 3's
`save_weights` takes only `.weights.h5`. These write the file Keras 2 wrote,
at the path given (`layer_names` / `weight_names` attributes, one group per
layer), which Keras 2, `tf_keras` and Keras 3's `load_weights` read, and
read back either layout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import keras
from absl import logging

from parallel_keras import _internals
from parallel_keras.cluster import writes
from parallel_keras.compat import optimizer_helpers
from parallel_keras.saving import atomic, files, legacy_models, matching, paths
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


def save_model(
    model: keras.Model,
    filepath: str | os.PathLike,
    overwrite: bool = True,
    include_optimizer: bool = True,
    save_format: Any = None,
    **kwargs: Any,
) -> None:
    """Keras 2's `model.save(filepath)`: a whole-model HDF5 file at exactly `filepath`.

    A `.keras`, `.h5` or `.hdf5` path is written as Keras 3 writes it; any
    other path (no suffix, `'%s/model_loss%f' % (folder, loss)`) gets the
    HDF5 file standalone Keras 2 wrote there (architecture, weights and
    optimizer), atomically, which `load_model` here reads back. A missing
    folder is created, as tf.keras 2's and Keras 3's HDF5 writers do. A
    `multi_gpu_model` result saves its template. Modernise: save to a path
    ending in `.keras` with `model.save`.

    Args:
        model: A Keras model or a parallel model.
        filepath: Where to write.
        overwrite: Replace an existing file. Defaults to True.
        include_optimizer: Also save the optimizer's state. Defaults to True.
        save_format: Keras 2's format argument; HDF5 is written whatever it
            says, as standalone Keras 2 did. Defaults to None.
        **kwargs: Ignored Keras 2 arguments.

    Raises:
        FileExistsError: With overwrite=False and an existing file.
    """
    del save_format, kwargs
    if os.fspath(filepath).endswith(paths.MODEL_SUFFIXES):
        atomic.save_model(model, filepath, overwrite=overwrite, include_optimizer=include_optimizer)
        return
    path = writes.write_path(os.fspath(filepath))
    paths.check_output_path(path, None, what="save", create_folder=True)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(
            "save will not replace an existing file with overwrite=False. "
            f"Received: filepath={path!r}, which exists. Pass overwrite=True or another path."
        )
    target = atomic.saving_target(model)
    image = atomic._hdf5_image(
        lambda file: _internals.legacy_h5_model_to(file, target, include_optimizer)
    )
    with atomic.atomic_path(path) as temporary:
        atomic._write_bytes(temporary, image)
    logging.info("Saved model %s to %s (Keras 2 HDF5 file)", target.name, path)


def load_model(
    filepath: str | os.PathLike,
    custom_objects: dict[str, Any] | None = None,
    compile: bool = True,  # noqa: A002 (Keras's own argument name)
    **kwargs: Any,
) -> keras.Model:
    """Keras 2's `load_model(filepath)`, from any path.

    Keras 3's `load_model` picks the format from the suffix and refuses any
    other. This reads the file by its content: an HDF5 file (what Keras 2
    wrote, whatever the path) as Keras 3 reads `.h5` files, a `.keras`
    archive as one. A model compiled with a `compat.keras2_optimizer` gets
    that optimizer back (Keras 2's formula and `decay`, with its state), as
    Keras 2's `load_model` gave back Keras 2's optimizer; Keras 3's loader
    would give its own class.

    An HDF5 file comes back ready to resume training, which Keras 3's own
    `load_model` of an `.h5` file (3.5 to 3.15) is not: it builds the file's
    optimizer for none of the model's variables (the optimizer's slots are
    dropped and `fit` raises "Unknown variable") and refuses a loss
    compiled as "mse" or "mae". Here the model is compiled from the file:
    the loss and metrics under their compiled names (`val_mae` stays
    `val_mae`), the optimizer built for `model.trainable_variables` with the
    file's iterations and slots (`saving.legacy_models`). Modernise: save
    to `.keras`, which Keras 3 resumes from, and load it with
    `keras.models.load_model` (a keras2_optimizer then comes back as Keras
    3's class).

    Args:
        filepath: The file.
        custom_objects: Classes and functions the file names. Defaults to None.
        compile: Compile the model as it was saved. Defaults to True.
        **kwargs: Passed to `keras.models.load_model`.

    Returns:
        The model.

    Raises:
        ValueError: If the file is missing or neither HDF5 nor a Keras archive,
            or an HDF5 file names a loss or metric Keras does not know and
            `custom_objects` does not hold.
    """
    path = os.fspath(filepath)
    if os.path.isfile(path):
        # A keras2_optimizer comes back as itself (Keras 2's formula, its
        # `decay`); the user's own objects win over these.
        optimizer = files.saved_optimizer_config(path)
        custom_objects = {
            **optimizer_helpers.keras2_optimizer_objects(optimizer),
            **(custom_objects or {}),
        }
    if path.endswith(paths.MODEL_SUFFIXES) or not os.path.isfile(path):
        return legacy_models.load_model(
            path, custom_objects=custom_objects, compile=compile, **kwargs
        )
    with open(path, "rb") as file:
        head = file.read(8)
    suffix = ".keras" if head.startswith(b"PK\x03\x04") else ".h5"
    with tempfile.TemporaryDirectory() as folder:
        # Keras reads the format from the name: the same bytes, under a name it knows.
        named = os.path.join(folder, "model" + suffix)
        try:
            os.link(path, named)
        except OSError:
            shutil.copyfile(path, named)
        return legacy_models.load_model(
            named, custom_objects=custom_objects, compile=compile, **kwargs
        )
