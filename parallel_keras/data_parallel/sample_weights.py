# SPDX-License-Identifier: Apache-2.0
"""Row counts, per-output sample weights and class weights as Keras 2 took them.

Keras 2 (keras/engine/training_utils.py, 2.2.4 to 2.3.1) checked and read a
call's arrays before anything ran:

* `check_array_length_consistency`: every input, target and sample-weight
  array must have the same number of rows. Keras 3 checks `fit`'s arrays
  but not `train_on_batch`'s; a parallel model splits each array into its
  own slices, so `[a, b[:2]]` gave each replica a few rows of one and
  broadcast them against the others': training on nonsense, no error.
* `standardize_sample_or_class_weights`: `sample_weight` and
  `class_weight` per output, as a list in output order or a dict by output
  name, `None` (or a missing name) for an output without weights. Keras 3
  takes sample weights in the targets' own structure only (a dict for dict
  targets) and class weights only for one output.
* `standardize_weights`: a class weight that is not a dict (after the
  unwrapping above, e.g. a list of one dict per label of a multi-label
  output) was ignored: every row weighed 1. Keras 3 refuses it.

The parallel model applies both in `fit`, `evaluate`, `predict` and the
`*_on_batch` methods, before it touches the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from absl import logging


def check_rows(method: str, x: Any, y: Any = None, sample_weight: Any = None) -> None:
    """Raises unless every array of `x`, `y` and `sample_weight` has as many rows.

    Only arrays (NumPy, tensors: anything with a `shape` of rank 1 or more)
    count; datasets, generators and Python numbers have no rows to compare.
    """
    parts = {"x": _rows(x), "y": _rows(y), "sample_weight": _rows(sample_weight)}
    counts = {rows for listed in parts.values() for rows in listed if rows is not None}
    if len(counts) <= 1:
        return
    received = ", ".join(f"{name}={_shown(listed)}" for name, listed in parts.items() if listed)
    raise ValueError(
        "Every input, target and sample-weight array of a call holds one row "
        "per sample, so all must have the same number of rows (Keras 2 "
        "refused others; a parallel model would split each array into other "
        f"slices). Received: {method} with rows {received}. Pass arrays of "
        "the same length, e.g. slice every one of them with the same [:n]."
    )


def keras2_call_arguments(model: Any, method: str, x: Any, y: Any, kwargs: dict) -> dict:
    """A `fit`/`evaluate` call's keyword arguments read as Keras 2 read them.

    Checks the rows of its arrays and of `validation_data`'s, and puts
    `sample_weight`/`class_weight` in the form Keras 3 takes
    (`as_keras2_weights`). Returns the keyword arguments to pass on.
    """
    check_rows(method, x, y, kwargs.get("sample_weight"))
    validation = kwargs.get("validation_data")
    if isinstance(validation, (tuple, list)) and len(validation) in (2, 3):
        check_rows(f"{method}(validation_data=...)", *validation)
    names = getattr(model, "output_names", None) or []
    if kwargs.get("sample_weight") is None and kwargs.get("class_weight") is None:
        return kwargs
    kwargs = dict(kwargs)
    weights, classes = as_keras2_weights(
        names, y, kwargs.get("sample_weight"), kwargs.get("class_weight")
    )
    for key, value in (("sample_weight", weights), ("class_weight", classes)):
        if key in kwargs or value is not None:
            kwargs[key] = value
    return kwargs


def as_keras2_weights(
    output_names: Sequence[str], y: Any, sample_weight: Any, class_weight: Any
) -> tuple[Any, Any]:
    """`(sample_weight, class_weight)` as Keras 3 takes them, read as Keras 2 did.

    With several outputs, `sample_weight` is put in the targets' structure
    (a list in output order for list targets, a dict by name for dict
    targets), and per-output class weights become per-output sample weights
    computed from array targets; an output without either gets `None` (each
    row weighs 1). Other arguments are returned as they are.

    Raises:
        ValueError: If a class weight lacks a class found in its targets.
    """
    names = list(output_names)
    if len(names) == 1:
        # Keras 2 took one output's weights alone, in a list of one, or by name.
        return _only(sample_weight, names[0], y), _ignored_unless_dict(
            _only(class_weight, names[0], y), names[0]
        )
    if len(names) < 2:
        return sample_weight, class_weight
    if per_output(class_weight, names):
        flat_targets = by_output(y, names)
        if flat_targets is not None and all(
            target is None or hasattr(target, "shape") for target in flat_targets
        ):
            class_weights = by_output(class_weight, names) or []
            given = by_output(sample_weight, names) or [None] * len(names)
            sample_weight = [
                weight
                if weight is not None or classes is None
                else class_weighted(name, target, classes)
                for name, target, weight, classes in zip(names, flat_targets, given, class_weights)
            ]
            class_weight = None
    if isinstance(y, Mapping):
        if isinstance(sample_weight, (list, tuple)) and len(sample_weight) == len(names):
            sample_weight = {
                name: weight for name, weight in zip(names, sample_weight) if weight is not None
            }
    elif isinstance(y, (list, tuple)) and isinstance(sample_weight, Mapping):
        if set(sample_weight) <= set(names):
            sample_weight = [sample_weight.get(name) for name in names]
    if isinstance(sample_weight, (list, tuple)) and all(w is None for w in sample_weight):
        sample_weight = None
    if (
        type(y) in (list, tuple)
        and type(sample_weight) in (list, tuple)
        and len(sample_weight) == len(y)
    ):
        # Keras 2 read both as lists; Keras 3 refuses a list of weights for a
        # tuple of targets (dicts read by name give tuples) and the reverse.
        sample_weight = type(y)(sample_weight)
    return sample_weight, class_weight


def _only(weights: Any, name: str, y: Any) -> Any:
    """One output's `weights` given as `[weights]` or `{name: weights}`, unwrapped
    (unless the targets have that structure too)."""
    if (
        isinstance(weights, (list, tuple))
        and len(weights) == 1
        and not isinstance(y, (list, tuple))
    ):
        return weights[0]
    if isinstance(weights, Mapping) and set(weights) == {name} and not isinstance(y, Mapping):
        return weights[name]
    return weights


def _ignored_unless_dict(class_weight: Any, name: str) -> Any:
    """Keras 2's `standardize_weights` used a class weight only if it was a dict."""
    if class_weight is None or isinstance(class_weight, Mapping):
        return class_weight
    logging.warning(
        "class_weight for output %r is a %s, not a dict of class -> weight: Keras 2 "
        "ignored it (every row weighs 1), and so does this model. To weigh classes, "
        "pass a dict such as {0: 1.0, 1: 5.0}.",
        name,
        type(class_weight).__name__,
    )
    return None


def per_output(class_weight: Any, names: list[str]) -> bool:
    """Whether `class_weight` names weights per output (list or dict by name)."""
    if isinstance(class_weight, (list, tuple)):
        return len(class_weight) == len(names)
    if isinstance(class_weight, Mapping) and class_weight:
        return set(class_weight) <= set(names)
    return False


def by_output(value: Any, names: list[str]) -> list | None:
    """`value` as one entry per output, in output order (None if not per output)."""
    if isinstance(value, Mapping):
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)) and len(value) == len(names):
        return list(value)
    return None


def class_weighted(name: str, target: Any, class_weight: Mapping) -> np.ndarray:
    """One weight per row from its class, as Keras 2's `standardize_weights`."""
    labels = np.asarray(target)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    labels = np.round(labels.reshape(len(labels), -1)[:, 0]).astype("int64")
    missing = sorted(set(labels.tolist()) - {int(key) for key in class_weight})
    if missing:
        raise ValueError(
            "A class weight gives every class in its output's targets a "
            f"weight. Received: class_weight for output {name!r} with classes "
            f"{sorted(int(key) for key in class_weight)}, and targets of "
            f"classes {missing} it leaves out. Add them to its class weight "
            "(1.0 weighs a row as without one)."
        )
    weights = {int(key): float(value) for key, value in class_weight.items()}
    return np.array([weights[label] for label in labels.tolist()], "float32")


def _rows(value: Any) -> list[int | None]:
    """The row count of each array in `value` (None: an entry with no array)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        if _is_number_list(value):
            return []  # Python numbers: one array to Keras 2, no rows to compare here.
        items = list(value)
    else:
        return _rows_or_none(value)
    return [rows for item in items for rows in _rows_or_none(item)]


def _rows_or_none(value: Any) -> list[int | None]:
    if value is None:
        return [None]
    if isinstance(value, (Mapping, list, tuple)):
        return _rows(value)
    shape = getattr(value, "shape", None)
    if shape is None or not len(shape) or shape[0] is None:
        return []
    return [int(shape[0])]


def _is_number_list(value: Sequence) -> bool:
    return bool(value) and all(isinstance(item, (int, float, np.number)) for item in value)


def _shown(rows: list[int | None]) -> str:
    return str(rows[0]) if len(rows) == 1 else str(rows)
