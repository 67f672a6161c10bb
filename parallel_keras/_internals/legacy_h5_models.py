# SPDX-License-Identifier: Apache-2.0
"""Whole-model legacy HDF5 files: the training config and optimizer state.

Upstream surface: `keras.src.legacy.saving.legacy_h5_format`
(`load_model_from_hdf5`, `load_optimizer_weights_from_hdf5_group`,
`load_attributes_from_hdf5_group`) and `keras.src.legacy.saving.json_utils.decode`,
the reader of the `training_config` attribute that `model.save("m.h5")`
writes (`saving_utils.model_metadata`).

Works around two failures of `load_model_from_hdf5` with `compile=True`,
measured on Keras 3.15.1:

1. It builds the file's optimizer with `model.optimizer.build(
   model._trainable_variables)` (that line read in the 3.5.0, 3.10.0,
   3.12.0 and 3.15.1 sources): the variables the model object created
   itself, none for a Sequential or functional model (its layers own
   them). The optimizer comes back built for no variable; `set_weights`
   zips the file's weights with its two (iterations, learning rate), so
   the slots (Adam's moments) are dropped without a word, and the first
   `fit` raises "Unknown variable: ... This optimizer can only be called
   for the variables it was originally built with". No upstream issue
   found for this.
2. A loss compiled as one of Keras's aliases ("mse", "mae", "mape",
   "msle", "kld") is stored as that string, which `losses.deserialize`
   refuses: "Could not deserialize 'keras.metrics.mse' because it is not a
   KerasSaveable subclass" (Keras 3.15; Keras 3.5: "Could not locate
   function 'mse'"); and a metric stored as "mae" is deserialized
   into `mean_absolute_error`, so the logs' "val_mae" is renamed.
   Possibly keras-team/keras#19330 (closed as stale, traceback in the same
   `losses.deserialize` call).

So parallel_keras loads such a file with `compile=False` and compiles it
from the file itself (`saving.legacy_models`), reading here only the file's
layout: the decoded training config and the optimizer's named weights.
`tests/internals/test_legacy_h5_models.py` fails when an upgrade fixes
either failure or the renaming (so this can go) or changes the layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def training_config(h5_file: Any) -> dict | None:
    """The file's decoded `training_config` attribute; None when it has none."""
    from keras.src.legacy.saving import json_utils

    config = h5_file.attrs.get("training_config")
    if config is None:
        return None
    if hasattr(config, "decode"):
        config = config.decode("utf-8")
    return json_utils.decode(config)


def keras_version(h5_file: Any) -> str:
    """The version of Keras that wrote the file ("" when it does not say)."""
    version = h5_file.attrs.get("keras_version", "")
    return version.decode("utf-8") if hasattr(version, "decode") else str(version)


def optimizer_weights(h5_file: Any) -> list[tuple[str, np.ndarray]]:
    """The file's optimizer weights as (name, value), in `optimizer.variables` order.

    Keras 3 writes `optimizer.variables` in order, named by their paths when
    saved (`adam/dense_kernel_momentum`); empty when the file has no
    optimizer state.
    """
    from keras.src.legacy.saving import legacy_h5_format

    if "optimizer_weights" not in h5_file:
        return []
    group = h5_file["optimizer_weights"]
    names = legacy_h5_format.load_attributes_from_hdf5_group(group, "weight_names")
    return [(str(name), np.asarray(group[name])) for name in names]
