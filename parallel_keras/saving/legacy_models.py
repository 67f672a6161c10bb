# SPDX-License-Identifier: Apache-2.0
"""Whole-model HDF5 files, loaded ready to resume training.

Keras 2 scripts checkpoint with `model.save("m.h5")` and resume with
`model = load_model("m.h5"); model.fit(...)`. Keras 3's `load_model` reads
such a file but compiles it with an optimizer built for no variable: the
file's optimizer state is dropped and the first `fit` raises "Unknown
variable"; a loss compiled as "mse" or "mae" does not load at all (see
`_internals.legacy_h5_models`). Here the model is read with `compile=False`
and compiled from the file's training config, the loss and metrics under the
names they were compiled with (so "val_mae" stays "val_mae"), the optimizer
built for the model's trainable variables and given the file's iterations
and slots.
"""

from __future__ import annotations

import os
from typing import Any

import h5py
import keras
import numpy as np
from absl import logging

from parallel_keras._internals import legacy_h5_models
from parallel_keras.saving import paths

# Metric names `compile` resolves from the model's outputs, not `metrics.get`.
_COMPILE_METRIC_NAMES = ("accuracy", "acc", "crossentropy", "ce")


def load_model(
    filepath: str,
    custom_objects: dict[str, Any] | None = None,
    compile: bool = True,  # noqa: A002 (Keras's own argument name)
    **kwargs: Any,
) -> keras.Model:
    """`keras.models.load_model`, with an HDF5 file compiled to resume training.

    A path not ending in `.h5`/`.hdf5`, or `compile=False`, goes to
    `keras.models.load_model` unchanged.
    """
    if not (compile and filepath.endswith(paths.LEGACY_SUFFIXES) and os.path.isfile(filepath)):
        return keras.models.load_model(
            filepath, custom_objects=custom_objects, compile=compile, **kwargs
        )
    model = keras.models.load_model(
        filepath, custom_objects=custom_objects, compile=False, **kwargs
    )
    with h5py.File(filepath, "r") as file:
        training_config = legacy_h5_models.training_config(file)
        saved_state = legacy_h5_models.optimizer_weights(file)
        written_by = legacy_h5_models.keras_version(file)
    if training_config is None:
        logging.warning(
            "load_model found no training configuration in %s (saved uncompiled or with "
            "include_optimizer=False), so the model is not compiled. Compile it before fit.",
            filepath,
        )
        return model
    model.compile(**compile_arguments(training_config, custom_objects or {}))
    # What the file holds of an optimizer saved before its first step.
    unbuilt_variables = list(model.optimizer.variables)
    model.optimizer.build(model.trainable_variables)
    restore_optimizer_state(model.optimizer, saved_state, written_by, filepath, unbuilt_variables)
    return model


def compile_arguments(training_config: dict, custom_objects: dict[str, Any]) -> dict[str, Any]:
    """`model.compile`'s arguments from a legacy HDF5 file's training config.

    A loss or metric saved as a name ("mse", "mae", "accuracy") is passed to
    `compile` as that name, so Keras names it in the logs as it did when
    the model was first compiled; a saved config is deserialized.
    """
    with keras.saving.custom_object_scope(custom_objects):
        optimizer = keras.optimizers.deserialize(training_config["optimizer_config"])
        return {
            "optimizer": optimizer,
            "loss": _compiled_objects(training_config.get("loss"), "loss", custom_objects),
            "metrics": _compiled_objects(training_config.get("metrics"), "metric", custom_objects),
            "weighted_metrics": _compiled_objects(
                training_config.get("weighted_metrics"), "metric", custom_objects
            ),
            "loss_weights": training_config.get("loss_weights"),
        }


def _compiled_objects(config: Any, kind: str, custom_objects: dict[str, Any]) -> Any:
    module = keras.losses if kind == "loss" else keras.metrics
    if config is None:
        return None
    if isinstance(config, str):
        if config in custom_objects:
            return custom_objects[config]
        if kind == "metric" and config in _COMPILE_METRIC_NAMES:
            return config
        try:
            module.get(config)
        except ValueError as error:
            raise ValueError(
                f"load_model compiles the model with the {kind}es the file names; this one is "
                f"neither a Keras {kind} nor in custom_objects. Received: {kind}={config!r}. "
                f"Pass custom_objects={{{config!r}: <the {kind}>}}, or compile=False and "
                "compile the model yourself."
            ) from error
        return config
    if isinstance(config, dict) and "class_name" in config:
        return module.deserialize(config, custom_objects=custom_objects)
    if isinstance(config, dict):
        return {
            key: _compiled_objects(value, kind, custom_objects) for key, value in config.items()
        }
    if isinstance(config, (list, tuple)):
        return [_compiled_objects(value, kind, custom_objects) for value in config]
    raise ValueError(
        f"load_model reads a {kind} of the file's training config as a name, a config "
        f"dict or a list or dict of those. Received: {kind}={config!r}. Load with "
        "compile=False and compile the model yourself."
    )


def restore_optimizer_state(
    optimizer: keras.optimizers.Optimizer,
    saved_state: list[tuple[str, np.ndarray]],
    written_by: str,
    filepath: str,
    unbuilt_variables: list | None = None,
) -> None:
    """Assigns the file's optimizer weights to the built optimizer's variables.

    In order, as Keras restores an optimizer (`set_weights`, and the `.keras`
    format, which stores them by index): the names hold generated parts
    (Nadam's `variable_2`, a wrapped optimizer's prefix) that differ between
    processes. A file saved before the optimizer's first step holds only the
    variables it had before `build` (`unbuilt_variables`: iterations, learning
    rate). When the file was not written by Keras 3 or its weights are not
    the ones this optimizer has (their count or shapes differ), nothing is
    assigned and the optimizer starts fresh, with a warning, as Keras's own
    loader does.
    """
    if not saved_state:
        return
    for variables in (optimizer.variables, unbuilt_variables or []):
        if written_by.startswith("3.") and _same_shapes(variables, saved_state):
            for variable, (_, value) in zip(variables, saved_state, strict=True):
                variable.assign(value)
            return
    logging.warning(
        "load_model restores the optimizer state of %s only when Keras 3 wrote it and "
        "it holds the variables the optimizer builds for the model, in order. "
        "Received: a file of Keras %r with weights %s, optimizer variables %s. The model "
        "resumes with a fresh optimizer (iterations 0); to keep the state, save and load "
        "with Keras 3 and the same optimizer class.",
        filepath,
        written_by,
        [(name, value.shape) for name, value in saved_state],
        [(variable.path, tuple(variable.shape)) for variable in optimizer.variables],
    )


def _same_shapes(variables: list, saved_state: list[tuple[str, np.ndarray]]) -> bool:
    return len(variables) == len(saved_state) and all(
        tuple(variable.shape) == value.shape
        for variable, (_, value) in zip(variables, saved_state, strict=True)
    )
