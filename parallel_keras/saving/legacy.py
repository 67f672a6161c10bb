# SPDX-License-Identifier: Apache-2.0
"""Keras 2 HDF5 weights, including files written from a multi_gpu_model.

A Keras 2 HDF5 file lists its layers in the `layer_names` attribute; each
layer's group lists its weights in `weight_names` (`dense_1/kernel:0`). A
file written from a `multi_gpu_model` *parallel* model (its `save_weights`,
`save`, or a legacy `ModelCheckpoint` on it) lists the inputs, the weightless
`lambda_*` slicing layers, ONE group named after the template (`model_1`,
`sequential_1`) holding every weight of the template, and weightless
concatenate layers. Inside that group Keras 2 listed all trainable weights
first and all non-trainable ones after, so BatchNormalization moving
statistics and frozen layers come last: loading it by position is what gave
a legacy tutorial's "axes don't match array".

Here the weights are regrouped by the layer named in each weight name and
matched to the template's layers by name, never by their place in that
list. Nothing stored in the file is evaluated: the `model_config` attribute
(which holds marshalled bytecode for Lambda layers) is never read.
"""

from __future__ import annotations

import dataclasses
import os
import re

import h5py
import keras
import numpy as np
from absl import logging

from parallel_keras.saving import atomic, cudnn_weights, files, matching

# DOTALL: a layer name may hold a line break; the pattern matches every name.
_SUFFIX_NUMBER = re.compile(r"(.*?)(?:_(\d+))?", re.DOTALL)
_TENSOR_INDEX = re.compile(r":\d+$")


@dataclasses.dataclass
class LegacyLayer:
    """One layer's weights as stored in a legacy file."""

    name: str
    weight_names: list[str]
    values: list[np.ndarray]

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [tuple(value.shape) for value in self.values]


@dataclasses.dataclass
class LegacyWeightsFile:
    """The weights of a legacy HDF5 file, grouped by layer."""

    path: str
    keras_version: str
    layers: list[LegacyLayer]
    # True when some group held other layers' weights: a parallel model's
    # template group, or a nested model. Their layer order is not kept.
    nested: bool


def read_legacy_file(filepath: str | os.PathLike) -> LegacyWeightsFile:
    """Reads the weights of a legacy (Keras 2 layout) HDF5 file.

    Args:
        filepath: A `.h5`/`.hdf5` file written by Keras 2 (`save_weights` or
            `save`, from a single or a `multi_gpu_model` parallel model) or
            by Keras 3 with an `.h5` suffix.

    Returns:
        A `LegacyWeightsFile`.

    Raises:
        ValueError: If the file is missing, not HDF5, truncated, or not in
            the legacy Keras layout.
    """
    path = os.fspath(filepath)
    kind = files.describe(path)
    if kind is not files.FileKind.LEGACY_HDF5:
        raise ValueError(
            "load_legacy_weights reads Keras 2 HDF5 files (with a "
            f"`layer_names` attribute). Received: filepath={path!r}, a "
            f"{kind.value} file. Load it with parallel_keras.load_weights."
        )
    # layer name -> group name -> (weight names, values). A layer appears in
    # several groups when a nested model holds it and the model also calls
    # it directly (or two nested models share it): Keras 2 wrote its full
    # weights in each, so one group's copy is kept (see `_one_copy`).
    by_layer: dict[str, dict[str, tuple[list[str], list[np.ndarray]]]] = {}
    nested = False
    try:
        with h5py.File(path, "r") as file:
            root = file["model_weights"] if "model_weights" in file else file
            version = _text(root.attrs.get("keras_version", file.attrs.get("keras_version", "")))
            for group_name in _attribute_list(root, "layer_names"):
                group = root[group_name]
                listed = set()
                for weight_name in _attribute_list(group, "weight_names"):
                    if weight_name in listed:
                        continue  # One dataset listed twice: one weight.
                    listed.add(weight_name)
                    layer_name, short_name = _split_weight_name(weight_name, group_name)
                    nested |= layer_name != group_name
                    names, values = by_layer.setdefault(layer_name, {}).setdefault(
                        group_name, ([], [])
                    )
                    names.append(short_name)
                    values.append(_numbers(group[weight_name], path))
    except MemoryError:
        raise ValueError(
            "A weights file's arrays must fit in memory to be loaded. "
            f"Received: filepath={path!r}, whose weights do not. Load it on a "
            "machine with more memory, or check where the file came from."
        ) from None
    except (OSError, KeyError) as error:
        raise ValueError(
            "This HDF5 file lists weights it does not contain, so it is "
            f"truncated or corrupt. Received: filepath={path!r} ({error}). "
            "Use an earlier copy of the file."
        ) from error
    layers = [_one_copy(name, groups) for name, groups in by_layer.items()]
    return LegacyWeightsFile(path, version, layers, nested)


def _one_copy(layer_name: str, groups: dict) -> LegacyLayer:
    """One layer's weights from the groups that list them.

    Keras 2 wrote every weight of a layer into each group that held the
    layer: its own group when the model calls it directly, and the group of
    each nested model that calls it. Those are copies of one variable, so the
    layer's own group is kept (else the first), as Keras 2's loader loaded
    the same values through each. Groups that list different weights for one
    name are not copies: their weights are joined, as listed.
    """
    copies = list(groups.items())
    names_of = [tuple(names) for _, (names, _) in copies]
    if len(copies) > 1 and len(set(names_of)) == 1:
        kept = groups.get(layer_name) or copies[0][1]
        return LegacyLayer(layer_name, list(kept[0]), list(kept[1]))
    layer = LegacyLayer(layer_name, [], [])
    for names, values in groups.values():
        layer.weight_names.extend(names)
        layer.values.extend(values)
    return layer


def load_legacy_weights(
    model: keras.Model,
    filepath: str | os.PathLike,
    *,
    by_name: bool = False,
    skip_mismatch: bool = False,
) -> list[str]:
    """Loads a Keras 2 HDF5 weights or model file into a template model.

    Reads files written by Keras 2 from a `multi_gpu_model` parallel model
    (`parallel_model.save_weights`, `parallel_model.save`, a legacy
    `ModelCheckpoint`) as well as plain single-model files. No multi-GPU
    machine is needed and no code stored in the file is run.

    Layers are matched to the file by name. When the names differ only in
    their numbering (Keras 2 named the first Dense `dense_1`, Keras 3 names
    it `dense`), layers are paired by type in creation order: by position
    for a plain file, by the number in their name for a parallel file,
    whose layer order Keras 2 did not keep. Every shape is checked before any
    weight is assigned.

    Args:
        model: The template (or a `ParallelModel`, whose template receives
            the weights), built with the architecture the file was saved
            from.
        filepath: The legacy `.h5`/`.hdf5` file.
        by_name: Load only the layers whose names appear in the file (at
            least one must). Defaults to False.
        skip_mismatch: Skip layers whose shapes differ instead of raising
            (at least one layer must load). Defaults to False.

    Returns:
        The names of the model's layers that received weights.

    Raises:
        ValueError: If the file cannot be read, or does not match the model;
            the message names the first mismatching layer and both shapes.
            The model is then left unchanged.

    Example:

    >>> import keras, parallel_keras
    >>> template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> parallel_keras.load_legacy_weights(template, "multi_gpu.h5")  # doctest: +SKIP
    ['dense']
    """
    target = atomic.saving_target(model)
    legacy = read_legacy_file(filepath)
    pairs = _pair_layers(legacy, target, by_name=by_name)
    assignments = []
    loaded = []
    for stored, layer in pairs:
        try:
            stored = _converted(stored, layer)
        except cudnn_weights.IncompatibleRNNWeights:
            if not skip_mismatch:
                raise
            logging.warning(
                "Skipping layer %s: CuDNNGRU weights need reset_after=True.", layer.name
            )
            continue
        mismatch = _weight_mismatch(stored, layer)
        if mismatch is None:
            assignments.extend(_match_weights(stored, layer))
            loaded.append(layer.name)
            continue
        if not skip_mismatch:
            raise matching.MismatchError(
                matching.mismatch_message(legacy.path, target, layer.name, stored.name, *mismatch)
            )
        logging.warning(
            "Skipping layer %s: the file's layer %s has weights of shapes %s, the model's %s.",
            layer.name,
            stored.name,
            mismatch[1],
            mismatch[0],
        )
    if not assignments:
        raise matching.NothingMatchedError(
            f"No layer of model {target.name!r} matched the file, so nothing "
            f"would load. Received: filepath={legacy.path!r} with layers "
            f"{[layer.name for layer in legacy.layers][:8]}, model layers "
            f"{[layer.name for layer in matching.weighted_layers(target)][:8]}. "
            "Build the template the file was saved from."
        )
    matching.assign_all(target, assignments)
    logging.info(
        "Loaded %d layers from %s (Keras %s) into %s",
        len(loaded),
        legacy.path,
        legacy.keras_version or "?",
        target.name,
    )
    return loaded


def _pair_layers(legacy: LegacyWeightsFile, model: keras.Model, by_name: bool):
    """Pairs each stored layer with a model layer, or raises on a mismatch."""
    layers = matching.weighted_layers(model)
    by_model_name = {layer.name: layer for layer in layers}
    stored_names = [stored.name for stored in legacy.layers]
    if by_name:
        return [(s, by_model_name[s.name]) for s in legacy.layers if s.name in by_model_name]
    if set(stored_names) == set(by_model_name):
        return [(stored, by_model_name[stored.name]) for stored in legacy.layers]
    if not legacy.nested:
        if len(legacy.layers) == len(layers):
            return list(zip(legacy.layers, layers))
        _raise_first_unpaired(legacy, model, list(zip(legacy.layers, layers)), layers)
    stored_buckets = _buckets(legacy.layers)
    model_buckets = _buckets(layers)
    pairs: list[tuple[LegacyLayer, keras.layers.Layer]] = []
    for base in dict.fromkeys([*model_buckets, *stored_buckets]):
        pairs.extend(zip(stored_buckets.get(base, []), model_buckets.get(base, [])))
        if len(stored_buckets.get(base, [])) != len(model_buckets.get(base, [])):
            _raise_first_unpaired(legacy, model, pairs, layers)
    return pairs


def _converted(stored: LegacyLayer, layer) -> LegacyLayer:
    """The stored layer with Keras 2 CuDNNLSTM/CuDNNGRU weights converted."""
    values = cudnn_weights.convert_for_layer(layer, stored.values)
    if values is stored.values:
        return stored
    return LegacyLayer(stored.name, stored.weight_names, values)


def _raise_first_unpaired(legacy, model, pairs, layers):
    paired = {id(layer) for _, layer in pairs}
    for stored, layer in pairs:
        stored = _converted(stored, layer)
        mismatch = _weight_mismatch(stored, layer)
        if mismatch is not None:
            raise matching.MismatchError(
                matching.mismatch_message(legacy.path, model, layer.name, stored.name, *mismatch)
            )
    paired_stored = {id(stored) for stored, _ in pairs}
    layer = next((layer for layer in layers if id(layer) not in paired), None)
    stored = next((s for s in legacy.layers if id(s) not in paired_stored), None)
    raise matching.MismatchError(
        matching.mismatch_message(
            legacy.path,
            model,
            layer.name if layer is not None else "(none)",
            stored.name if stored is not None else "(none)",
            [tuple(w.shape) for w in layer.weights] if layer is not None else [],
            stored.shapes if stored is not None else [],
            extra=f"The model has {len(layers)} layers with weights, the file "
            f"{len(legacy.layers)}.",
        )
    )


def _buckets(layers) -> dict[str, list]:
    """Layers by name without its number, each list in numbering order."""
    buckets: dict[str, list] = {}
    for layer in layers:
        match = _SUFFIX_NUMBER.fullmatch(layer.name)
        if match is None:
            raise RuntimeError(  # The pattern matches every string: a bug here.
                f"parallel_keras could not split a layer name. Received: {layer.name!r}."
            )
        base, number = match.groups()
        # Keras 2's `cu_dnnlstm_1` is the `lstm` of a migrated template.
        base = cudnn_weights.keras3_base_name(base)
        buckets.setdefault(base, []).append((int(number or 0), layer))
    return {
        base: [layer for _, layer in sorted(items, key=lambda item: item[0])]
        for base, items in buckets.items()
    }


def _weight_mismatch(stored: LegacyLayer, layer):
    """(model shapes, file shapes) when they differ, else None."""
    model_shapes = [tuple(w.shape) for w in _ordered_variables(stored, layer)]
    if model_shapes != stored.shapes:
        return model_shapes, stored.shapes
    return None


def _ordered_variables(stored: LegacyLayer, layer):
    """The layer's variables in the file's order: by name when all names match."""
    variables = list(layer.weights)
    names = [variable.name for variable in variables]
    if sorted(names) == sorted(stored.weight_names) and len(set(names)) == len(names):
        by_short_name = dict(zip(names, variables))
        return [by_short_name[name] for name in stored.weight_names]
    return variables


def _match_weights(stored: LegacyLayer, layer):
    return list(zip(_ordered_variables(stored, layer), stored.values))


def _split_weight_name(weight_name: str, group_name: str) -> tuple[str, str]:
    """(layer name, weight name) of one entry of a group's `weight_names`.

    A layer's own group: `dense_1/kernel:0`, or Keras 3's full path
    `sequential/dense/kernel` in group `dense` -> the group's layer. A
    parallel model's template group `model_1`: `dense_1/kernel:0` ->
    `dense_1` (Keras 2 named weights after their layer, not the model).
    """
    parts = _TENSOR_INDEX.sub("", weight_name).split("/")
    if len(parts) == 1 or group_name in parts[:-1]:
        return group_name, parts[-1]
    return parts[0], parts[-1]


def _numbers(dataset: h5py.Dataset, path: str) -> np.ndarray:
    """A weight's values; a dataset of strings or records is refused."""
    if dataset.dtype.kind not in "biuf":
        raise ValueError(
            "A weight is an array of numbers. Received: "
            f"filepath={path!r}, whose {dataset.name!r} holds {dataset.dtype} "
            f"values of shape {dataset.shape}. The file was crafted or written "
            "by another tool: load an earlier copy, or save the weights again "
            "with model.save_weights."
        )
    return np.asarray(dataset[()])


def _attribute_list(group: h5py.Group, name: str) -> list[str]:
    if name in group.attrs:
        return [_text(item) for item in group.attrs[name]]
    values: list[str] = []
    chunk = 0
    while f"{name}{chunk}" in group.attrs:
        values.extend(_text(item) for item in group.attrs[f"{name}{chunk}"])
        chunk += 1
    return values


def _text(value) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)
