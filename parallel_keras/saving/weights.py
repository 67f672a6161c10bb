# SPDX-License-Identifier: Apache-2.0
"""Loading weights that never lies: check first, then assign, or change nothing.

Keras 3's `load_weights` assigns layer by layer and raises at the first
layer whose shapes differ, leaving the layers before it loaded (checked on
Keras 3.15 with `.weights.h5`); a `skip_mismatch` load that matches nothing
succeeds silently. A legacy tutorial reported the Keras 2 form of the same thing:
`by_name=True` "loaded", and the weights were invalid. `load_weights` here
compares the file with the model before touching anything, names the first
mismatching layer with both shapes, restores every weight if Keras fails
anyway, and treats a load that matches no layer as an error.
"""

from __future__ import annotations

import io
import os

import h5py
import keras
import numpy as np
from absl import logging

from parallel_keras import _internals
from parallel_keras.saving import atomic, files, legacy, matching, paths
from parallel_keras.saving.matching import MismatchError, mismatch_message, weighted_layers


def _checkpoint_file(path: str) -> str:
    """The file `parallel_keras.callbacks.ModelCheckpoint` wrote for `path`, if that one is.

    For a Keras 2 path Keras 3 cannot write (`tmpXYZ`, `w.ckpt`), the
    checkpoint writes `path + '.weights.h5'`; a script that then loads
    `path` (a `NamedTemporaryFile`'s empty file, or nothing) means that file.
    """
    if path.endswith(paths.WEIGHTS_SUFFIXES) or path.endswith(paths.MODEL_SUFFIXES):
        return path
    written = path + ".weights.h5"
    missing_or_empty = not os.path.exists(path) or (
        os.path.isfile(path) and os.path.getsize(path) == 0
    )
    if missing_or_empty and os.path.isfile(written):
        logging.info("Loading %s, which ModelCheckpoint wrote for %s.", written, path)
        return written
    return path


def load_weights(
    model: keras.Model,
    filepath: str | os.PathLike,
    *,
    by_name: bool = False,
    skip_mismatch: bool = False,
) -> list[str]:
    """Loads a weights or model file into `model`, or changes nothing.

    Reads Keras 3 `.weights.h5` files and `.keras` archives, and legacy
    `.h5` files (Keras 2 or 3, single or `multi_gpu_model` parallel models,
    through `load_legacy_weights`).

    Args:
        model: The model to load into; a `ParallelModel` loads into its
            template (the weights are shared).
        filepath: The file.
        by_name: Legacy `.h5` files only: load the layers whose names appear
            in the file. Defaults to False.
        skip_mismatch: Skip layers whose shapes differ. At least one layer
            must load. Defaults to False.

    Returns:
        The names of the layers that received weights.

    Raises:
        ValueError: If the file is missing, not a Keras file, truncated, or
            does not match the model (`MismatchError`, naming the first
            mismatching layer and both shapes). The model is unchanged.

    Example:

    >>> import keras, parallel_keras
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> parallel_keras.load_weights(model, "run.weights.h5")  # doctest: +SKIP
    ['dense']
    """
    target = atomic.saving_target(model)
    path = _checkpoint_file(os.fspath(filepath))
    kind = files.describe(path, weights_bytes=_weights_bytes(target))
    if kind is files.FileKind.LEGACY_HDF5:
        return legacy.load_legacy_weights(
            target, path, by_name=by_name, skip_mismatch=skip_mismatch
        )
    if by_name:
        raise ValueError(
            "by_name applies to legacy `.h5` files; Keras 3 files are matched "
            f"by model structure. Received: by_name=True with {path!r}, a "
            f"{kind.value} file. Drop by_name, or pass skip_mismatch=True to "
            "skip layers whose shapes differ."
        )
    loaded = _check_keras_file(target, path, kind, skip_mismatch)
    snapshot = matching.snapshot(target)
    try:
        # Keras's own method: a wrapped template's `load_weights` is this
        # function (see data_parallel/template.py).
        keras.Model.load_weights(target, path, skip_mismatch=skip_mismatch)
    except Exception as error:
        matching.restore(snapshot)
        raise MismatchError(
            f"Keras could not load {path!r} into model {target.name!r}: "
            f"{error} The model was left unchanged."
        ) from error
    logging.info("Loaded %d layers from %s into %s", len(loaded), path, target.name)
    return loaded


def _check_keras_file(model, path, kind, skip_mismatch) -> list[str]:
    """Compares a Keras 3 file's layer groups with the model's; raises first."""
    expected = _expected_layout(model)
    with files.open_weights(path, kind) as file:
        stored = _layout(file)
    order = {layer.name: index for index, layer in enumerate(weighted_layers(model))}
    keys = sorted(
        set(expected) | set(stored),
        key=lambda key: (key not in expected, order.get(expected.get(key, ("",))[0], 1e9), key),
    )
    loaded, first = [], None
    for key in keys:
        model_name, model_shapes = expected.get(key, ("(none)", []))
        file_name, file_shapes = stored.get(key, ("(none)", []))
        if model_shapes == file_shapes:
            if model_shapes:
                loaded.append(model_name)
        elif first is None:
            first = (model_name, file_name, model_shapes, file_shapes)
    if first is not None and not skip_mismatch:
        counts = (
            f"The model has {sum(bool(v[1]) for v in expected.values())} layers "
            f"with weights, the file {sum(bool(v[1]) for v in stored.values())}."
        )
        raise MismatchError(mismatch_message(path, model, *first, extra=counts))
    if not loaded:
        raise MismatchError(
            f"No layer of model {model.name!r} matches the file, so nothing "
            f"would load. Received: filepath={path!r}, skip_mismatch="
            f"{skip_mismatch}. Build the model the file was saved from."
        )
    return loaded


def _weights_bytes(model: keras.Model) -> int:
    """The bytes of `model`'s weights in memory."""
    total = 0
    for variable in model.weights:
        try:
            itemsize = np.dtype(keras.backend.standardize_dtype(variable.dtype)).itemsize
        except TypeError:  # A dtype NumPy does not name (bfloat16): at most 8 bytes.
            itemsize = 8
        total += int(np.prod(variable.shape)) * itemsize
    return total


def _expected_layout(model: keras.Model):
    # Keras names each layer's group by class and position (layers/dense_1);
    # saving the model itself is the exact way to learn the names it expects.
    # In memory: a reference file on a full disk (or past the file-size
    # limit) would crash HDF5 at the next save (see `atomic`).
    with h5py.File(io.BytesIO(_internals.keras_weights_image(model)), "r") as file:
        layout = _layout(file)
        _name_unnamed_groups(model, file, layout)
        return layout


def _name_unnamed_groups(model, file, layout) -> None:
    """Names each group by the layer whose weights it holds.

    Keras 3.8+ writes each layer's name on its group; 3.5-3.7 write none,
    and the group path (`layers/dense_1`) is all `_layout` finds. The file
    was just saved from `model`, so a group's arrays equal its layer's
    weights; layers are taken in order, each once.
    """
    unclaimed = list(weighted_layers(model))
    for key, (name, shapes) in layout.items():
        if name != key + "/vars" and name != key:
            continue  # Named by Keras.
        group = file[key + "/vars"] if key + "/vars" in file else file[key]
        arrays = [group[index][()] for index in sorted(group.keys(), key=_index)]
        for layer in unclaimed:
            weights = [w.numpy() if hasattr(w, "numpy") else w for w in layer.get_weights()]
            if len(weights) == len(arrays) and all(
                a.shape == b.shape and (a == b).all() for a, b in zip(weights, arrays)
            ):
                layout[key] = (layer.name, shapes)
                unclaimed.remove(layer)
                break


def _layout(file) -> dict[str, tuple[str, list[tuple[int, ...]]]]:
    """Group path -> (saved layer name, weight shapes), optimizer excluded."""
    layout = {}

    def visit(name, item):
        if name.startswith("optimizer") or not name.endswith("vars"):
            return
        if not hasattr(item, "keys"):
            return
        shapes = [tuple(item[key].shape) for key in sorted(item.keys(), key=_index)]
        layout[name[: -len("/vars")] or name] = (str(item.attrs.get("name", name)), shapes)

    file.visititems(visit)
    return layout


def _index(key: str):
    return (0, int(key)) if key.isdigit() else (1, key)
