"""Loading weights that never lies: check first, then assign, or change nothing.

Keras 3's `load_weights` assigns layer by layer and raises at the first
layer whose shapes differ, leaving the layers before it loaded (checked on
Keras 3.15 with `.weights.h5`); a `skip_mismatch` load that matches nothing
succeeds silently. Seed 000 reported the Keras 2 form of the same thing:
`by_name=True` "loaded", and the weights were invalid. `load_weights` here
compares the file with the model before touching anything, names the first
mismatching layer with both shapes, restores every weight if Keras fails
anyway, and treats a load that matches no layer as an error.
"""

from __future__ import annotations

import os
import tempfile

from absl import logging
import h5py
import keras
import numpy as np

from parallel_keras.saving import atomic
from parallel_keras.saving import files


class MismatchError(ValueError):
    """A weights file does not fit the model; the model was left unchanged."""


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
    path = os.fspath(filepath)
    kind = files.describe(path)
    if kind is files.FileKind.LEGACY_HDF5:
        from parallel_keras.saving import legacy  # pylint: disable=g-import-not-at-top

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
    snapshot = _snapshot(target)
    try:
        # Keras's own method: a wrapped template's `load_weights` is this
        # function (see data_parallel/template.py).
        keras.Model.load_weights(target, path, skip_mismatch=skip_mismatch)
    except Exception as error:
        _restore(snapshot)
        raise MismatchError(
            f"Keras could not load {path!r} into model {target.name!r}: "
            f"{error} The model was left unchanged."
        ) from error
    logging.info("Loaded %d layers from %s into %s", len(loaded), path, target.name)
    return loaded


def weighted_layers(model: keras.Model) -> list[keras.layers.Layer]:
    """The layers holding weights, nested models flattened, in model order."""
    found = []
    for layer in getattr(model, "layers", []):
        if isinstance(layer, keras.Model):
            found.extend(weighted_layers(layer))
        elif layer.weights:
            found.append(layer)
    return found


def mismatch_message(
    path: str,
    model: keras.Model,
    model_layer: str,
    file_layer: str,
    model_shapes,
    file_shapes,
    extra: str = "",
) -> str:
    """The error for a file that does not fit a model."""
    return (
        f"The weights file does not match model {model.name!r}: its first "
        f"mismatching layer is {model_layer!r}, with weight shapes "
        f"{_shapes(model_shapes)} in the model and {_shapes(file_shapes)} in "
        f"the file's layer {file_layer!r}. {extra + ' ' if extra else ''}"
        f"Received: filepath={path!r}. The model was left unchanged. Build "
        "the model with the architecture the file was saved from, or pass "
        "skip_mismatch=True to load only the layers that match."
    )


def assign_all(model: keras.Model, assignments) -> None:
    """Assigns (variable, value) pairs; on any failure restores every one."""
    snapshot = _snapshot(model)
    try:
        for variable, value in assignments:
            variable.assign(np.asarray(value).astype(variable.dtype))
    except Exception:
        _restore(snapshot)
        raise


def _shapes(shapes) -> str:
    return "[" + ", ".join(str(tuple(shape)) for shape in shapes) + "]"


def _snapshot(model: keras.Model):
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    return [(variable, np.array(variable.numpy(), copy=True)) for variable in variables]


def _restore(snapshot) -> None:
    for variable, value in snapshot:
        variable.assign(value)


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


def _expected_layout(model: keras.Model):
    # Keras names each layer's group by class and position (layers/dense_1);
    # saving the model itself is the exact way to learn the names it expects.
    with tempfile.TemporaryDirectory() as folder:
        reference = os.path.join(folder, "reference.weights.h5")
        model.save_weights(reference)
        with h5py.File(reference, "r") as file:
            return _layout(file)


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
