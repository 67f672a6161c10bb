# SPDX-License-Identifier: Apache-2.0
"""Dict data read by the model's input and output names, as Keras 2 read it.

Keras 2.2.4 and 2.3.1 (`training_utils.standardize_input_data`) read a dict
of inputs or targets by name: the array of each model input (each output
given a loss), in the model's order, and nothing else. Keys no input or
output has were ignored; Keras 2's own `image_ocr` example, copied by many
CTC projects, yields `{'the_input': ..., 'the_labels': ..., 'source_str':
<strings>}` batches whose `source_str` feeds nothing. Keras 3's data
adapters convert every key (`ValueError: Invalid dtype: str160`), and a
model with one output refuses targets keyed by its name.

`by_name` reads one batch that way; `batches` reads a generator, a
`tf.data.Dataset` or a `keras.utils.Sequence` batch by batch. The parallel
model applies them to its data (`keras2_arguments.call_data`), and
`parallel_keras.compat.named_batches` / `compat.fit_generator` to a plain
model's. Models whose inputs or outputs are themselves a dict keep Keras 3's
rules except that keys they lack are dropped.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

import keras
import tensorflow as tf
from absl import logging

# The dropped key sets already logged, once each per process.
_LOGGED: set[tuple[str, frozenset[str]]] = set()


def _template(model: Any) -> Any:
    return getattr(model, "template", model)


def _structure(model: Any, kind: str) -> Any:
    """`model.input` / `model.output`, or None for a model without them."""
    try:
        return getattr(_template(model), kind)
    except (AttributeError, ValueError):
        return None


def _names(structure: Any) -> list[str] | None:
    if structure is None:
        return None
    if isinstance(structure, Mapping):
        return list(structure)
    tensors = structure if isinstance(structure, (list, tuple)) else [structure]
    names = [getattr(tensor, "name", None) for tensor in tensors]
    return [str(name) for name in names] if all(isinstance(n, str) for n in names) else None


def input_names(model: Any) -> list[str] | None:
    """The names of `model`'s inputs in order (None for a subclassed model)."""
    return _names(_structure(model, "input"))


def output_names(model: Any) -> list[str] | None:
    """The names of `model`'s outputs in order (None if it has none yet)."""
    if isinstance(_structure(model, "output"), Mapping):
        return _names(_structure(model, "output"))
    names = getattr(_template(model), "output_names", None)
    return list(names) if names else None


def _log_dropped(model: Any, role: str, dropped: list[str]) -> None:
    key = (f"{id(_template(model))}:{role}", frozenset(dropped))
    if key in _LOGGED:
        return
    _LOGGED.add(key)
    logging.info(
        "Keys of the %s dict that no %s of model %r has are not fed (as in Keras 2): %s.",
        role,
        "input" if role == "inputs" else "output",
        getattr(_template(model), "name", None),
        ", ".join(map(repr, dropped)),
    )


def _select(model: Any, data: Mapping, names: list[str], role: str, keyed: bool) -> Any:
    missing = [name for name in names if name not in data]
    if missing and role == "inputs":
        raise ValueError(
            "A dict of inputs holds one array per model input, keyed by the input's "
            f"name (Keras 2 read it by name). Model {_template(model).name!r} has inputs "
            f"{names}; the dict lacks {missing}. Received: keys {sorted(map(str, data))}. "
            "Add the missing keys to the dict your data yields (the `name=` of each "
            "`Input`)."
        )
    dropped = [str(key) for key in data if key not in names]
    if dropped:
        _log_dropped(model, role, dropped)
    if keyed or missing:
        # A dict-shaped model, or targets for some outputs only: Keras 3 reads
        # the remaining keys by name itself.
        return {name: data[name] for name in names if name in data}
    ordered = tuple(data[name] for name in names)
    return ordered[0] if len(ordered) == 1 else ordered


def by_name(model: Any, x: Any = None, y: Any = None, sample_weight: Any = None) -> tuple:
    """`(x, y, sample_weight)` with dicts read by the model's names, as Keras 2 did.

    A dict `x` becomes the model's inputs in order (one array for one
    input), a dict `y` or `sample_weight` the outputs' likewise; keys no
    input or output has are dropped and logged once. Anything else is
    returned as is.

    Raises:
        ValueError: If a dict of inputs lacks one of the model's inputs.
    """
    names = input_names(model)
    if isinstance(x, Mapping) and names:
        x = _select(model, x, names, "inputs", isinstance(_structure(model, "input"), Mapping))
    outputs = output_names(model)
    keyed = isinstance(_structure(model, "output"), Mapping)
    if isinstance(y, Mapping) and outputs:
        y = _select(model, y, outputs, "targets", keyed)
    if isinstance(sample_weight, Mapping) and outputs:
        sample_weight = _select(model, sample_weight, outputs, "sample weights", keyed)
    return x, y, sample_weight


def batch_by_name(model: Any, batch: Any) -> Any:
    """One batch a generator yielded (`x`, `(x,)`, `(x, y)`, `(x, y, w)`), by name."""
    if isinstance(batch, tuple) and 1 <= len(batch) <= 3:
        selected = by_name(model, *batch)[: len(batch)]
        return tuple(selected)
    if isinstance(batch, Mapping):
        # The inputs alone (a predict generator's): a 1-tuple, so that a
        # tuple of several inputs is not read as `(x, y)`.
        return (by_name(model, batch)[0],)
    return batch


def _generator(model: Any, generator: Iterator) -> Iterator:
    for batch in generator:
        yield batch_by_name(model, batch)


class _NamedSequence(keras.utils.PyDataset):
    """A Sequence/PyDataset whose batches are read by name; all else is its own.

    Keras reads a `PyDataset` through its public protocol: `num_batches`
    (or `__len__`), `__getitem__`, the `on_epoch_begin` / `on_epoch_end`
    hooks and the `workers`, `use_multiprocessing`, `max_queue_size`
    settings. Every part of it but `__getitem__` is the wrapped
    sequence's own, so that the data keeps its epoch logic (e.g.
    `repeat_sequence` moves on to the next batches in `on_epoch_begin`),
    and `__getattr__` gives the rest (a project's own attributes).
    """

    def __init__(self, model: Any, sequence: Any):
        super().__init__()  # Its settings are not read: the properties below are.
        self.reading_model = model
        self.sequence = sequence

    def __len__(self) -> int:
        return len(self.sequence)

    @property
    def num_batches(self) -> int | None:
        return self.sequence.num_batches

    @property
    def workers(self) -> int:
        return getattr(self.sequence, "workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        return getattr(self.sequence, "use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        return getattr(self.sequence, "max_queue_size", 10)

    def __getitem__(self, index: int) -> Any:
        return batch_by_name(self.reading_model, self.sequence[index])

    def on_epoch_begin(self) -> None:
        self.sequence.on_epoch_begin()

    def on_epoch_end(self) -> None:
        self.sequence.on_epoch_end()

    def __getattr__(self, name: str) -> Any:
        if name in ("sequence", "reading_model"):
            raise AttributeError(name)
        return getattr(self.sequence, name)


def _dataset(model: Any, dataset: tf.data.Dataset) -> tf.data.Dataset:
    spec = dataset.element_spec
    parts = spec if isinstance(spec, tuple) else (spec,)
    if not any(isinstance(part, Mapping) for part in parts):
        return dataset
    if isinstance(spec, tuple):
        return dataset.map(lambda *element: batch_by_name(model, tuple(element)))
    return dataset.map(lambda element: batch_by_name(model, element))


def batches(model: Any, data: Any) -> Any:
    """`data` whose dict batches `model` reads by name, as Keras 2 did.

    Args:
        model: A Keras model or a parallel model.
        data: A Python generator, a `keras.utils.Sequence` / `PyDataset` or
            a `tf.data.Dataset`; anything else is returned as is.

    Returns:
        The same kind of data: a generator, a `PyDataset`, a dataset.
    """
    if isinstance(data, types.GeneratorType):
        return _generator(model, data)
    if isinstance(data, _NamedSequence):
        return data
    if isinstance(data, keras.utils.PyDataset):
        return _NamedSequence(model, data)
    if isinstance(data, tf.data.Dataset):
        return _dataset(model, data)
    return data
