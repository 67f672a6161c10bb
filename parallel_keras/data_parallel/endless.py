# SPDX-License-Identifier: Apache-2.0
"""An endless `tf.data` dataset needs a step count, as it did in Keras 2.

Keras 2 refused `fit(dataset.repeat())` without `steps_per_epoch` ("When
providing an infinite dataset, you must specify the number of steps to
run"); Keras 3 (checked on 3.15) starts the first epoch and never ends it.
Legacy scripts that relied on the error would now train forever, so the
parallel model's `fit`, `evaluate` and `predict` raise it again.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

# Where the step count goes, and how many leading arguments the parallel
# model's method names itself (x, y, batch_size; predict has no y).
_STEPS = {"fit": ("steps_per_epoch", 3), "evaluate": ("steps", 3), "predict": ("steps", 2)}


def check_steps(x: Any, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Raises ValueError for an endless dataset given without a step count.

    Args:
        x: The data given to `method`.
        method: "fit", "evaluate" or "predict".
        args: The positional arguments after the ones the method names.
        kwargs: Its keyword arguments.
    """
    if not isinstance(x, tf.data.Dataset):
        return
    if int(x.cardinality()) != int(tf.data.INFINITE_CARDINALITY):
        return
    name, named = _STEPS[method]
    parameters = [
        p for p in inspect.signature(getattr(keras.Model, method)).parameters if p != "self"
    ]
    steps = kwargs.get(name, dict(zip(parameters[named:], args)).get(name))
    if steps is not None:
        return
    raise ValueError(
        f"{method} on an endless dataset needs the number of steps to run, or "
        "it never ends (Keras 2 refused it; Keras 3 runs forever). Received: "
        f"{method}(x) with a dataset of infinite cardinality (`.repeat()` "
        f"without a count) and {name}=None. Pass {name}=N (e.g. rows // "
        "global batch size), or drop the `.repeat()`."
    )
