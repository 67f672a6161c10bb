# SPDX-License-Identifier: Apache-2.0
"""Compile and call arguments read as Keras 2 read them.

Keras 2.2.4 and 2.3.1 (keras/engine/training.py, `compile`, and
training_utils.py, `standardize_input_data`, `collect_metrics`) read a
multi-output model's compile arguments and a call's data more loosely than
Keras 3 does, and a Keras 2 script relies on it:

* One loss (not a list or dict) applied to every output, each output's loss
  named and logged separately; a list of losses or of `loss_weights` had to
  hold one entry per output, refused at compile otherwise (Keras 3 accepts
  `loss_weights=[0.5]` for two outputs, and fails only at the first batch on
  a loss per output too many).
* A flat list of metrics went to every output, each logged as
  `<output>_<metric>` (`dense_1_acc`); Keras 3 refuses the list.
* An output given no loss (left out of a loss dict, or `None` in a loss
  list) was skipped (`skip_target_indices`): it took no targets and no
  metrics, whatever `metrics` named for it. Keras 3 would compute its
  metrics on missing targets ("None values not supported").
* A list of numbers was one array on a model with one input or output
  (`train_on_batch(x, [0, 1])`), and on a model with several, each list of
  numbers in the list was one array; Keras 3 reads a list as a structure.
* A dict of inputs or targets was read by the model's names, keys no input
  or output has ignored (`named_data`, also for generators, datasets and
  Sequences).
* `predict_generator` took a generator yielding the inputs alone (or
  `(x, y)`, whose targets it ignored); Keras 3's `predict` wants a tuple.

The parallel model applies them in `compile`, `fit`, `evaluate`, `predict`
and the `*_on_batch` methods; dict outputs and subclassed templates keep
Keras 3's rules.
"""

from __future__ import annotations

import numbers
import types
from collections.abc import Iterator, Mapping
from typing import Any

import keras
import numpy as np

from parallel_keras.data_parallel import named_data


def _list_outputs(model: keras.Model) -> int | None:
    """How many outputs `model` has if they are a list (Keras 2's only kind)."""
    template: Any = getattr(model, "template", None)
    try:
        outputs = template.output
    except (AttributeError, ValueError):
        # A Sequential model built from an `Input` was never called, so
        # has `outputs` only; a subclassed model has neither.
        outputs = getattr(template, "outputs", None)
        if not outputs:
            return None
    if isinstance(outputs, Mapping):
        return None
    return len(outputs) if isinstance(outputs, (list, tuple)) else 1


def compile_arguments(model: keras.Model, loss, loss_weights, metrics, weighted_metrics):
    """`(loss, loss_weights, metrics, weighted_metrics)` as Keras 2 read them.

    Raises:
        ValueError: If a list of losses or of loss weights does not hold one
            entry per output, as Keras 2 refused it at compile.
    """
    count = _list_outputs(model)
    if count is None:
        return loss, loss_weights, metrics, weighted_metrics
    names = list(getattr(model, "output_names", None) or [])
    for argument, value in (("loss", loss), ("loss_weights", loss_weights)):
        if isinstance(value, (list, tuple)) and len(value) != count:
            raise ValueError(
                f"A list given as `{argument}` holds one entry per model "
                f"output (Keras 2 refused any other length at compile). The "
                f"model has {count} outputs {names}. Received: {argument}="
                f"{_short(value)}, {len(value)} entries. Pass {count} entries "
                f"in output order, or a dict keyed by output name"
                + (" (or one loss for every output)." if argument == "loss" else ".")
            )
    if count < 2:
        return loss, loss_weights, metrics, weighted_metrics
    if loss is not None and not isinstance(loss, (list, tuple, Mapping)):
        loss = [loss] * count  # Keras 2: the same loss for every output.
    if isinstance(loss, (list, tuple)) and isinstance(loss_weights, Mapping):
        loss_weights = [loss_weights.get(name, 1.0) for name in names]
    skipped = [name for name in names if name not in outputs_with_loss(loss, names)]
    return (
        loss,
        loss_weights,
        _without(_per_output(metrics, names, skipped), names, skipped),
        _without(_per_output(weighted_metrics, names, skipped), names, skipped),
    )


def outputs_with_loss(loss: Any, names: list[str]) -> list[str]:
    """The outputs Keras 2 fed targets and computed metrics for: those given
    a loss (all of them for one loss, or none given)."""
    if isinstance(loss, Mapping):
        return [name for name in names if loss.get(name) is not None]
    if isinstance(loss, (list, tuple)) and len(loss) == len(names):
        return [name for name, value in zip(names, loss) if value is not None]
    return list(names)


def _per_output(metrics, names: list[str], skipped: list[str]):
    """A flat metric list as one copy per output given a loss (Keras 2's
    `collect_metrics`; outputs without a loss get none), the first such
    output holding the objects passed."""
    if not isinstance(metrics, (list, tuple)) or not metrics:
        return metrics
    if any(isinstance(metric, (list, tuple, Mapping)) or metric is None for metric in metrics):
        return metrics  # Already one entry per output (Keras 3's spelling).
    per_output: list[list] = []
    for name in names:
        if name in skipped:
            per_output.append([])
        elif not any(per_output):
            per_output.append(list(metrics))
        else:
            per_output.append([_clone(metric) for metric in metrics])
    return per_output


def _without(metrics, names: list[str], skipped: list[str]):
    """Per-output `metrics` with none for the `skipped` outputs."""
    if not skipped or not metrics or isinstance(metrics, str):
        return metrics
    if isinstance(metrics, Mapping):
        if not set(metrics) <= set(names):
            return metrics
        return {name: value for name, value in metrics.items() if name not in skipped}
    if isinstance(metrics, (list, tuple)) and len(metrics) == len(names):
        return [[] if name in skipped else value for name, value in zip(names, metrics)]
    return metrics


def _clone(metric):
    """A `Metric` object of its own for each further output: Keras 3 keeps
    one state per object, which two outputs would both update (Keras 2.3's
    training_utils cloned stateful metrics per output likewise)."""
    if isinstance(metric, keras.metrics.Metric):
        return type(metric).from_config(metric.get_config())
    return metric


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# --- Call data ---------------------------------------------------------------


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Number, np.bool_)) or (
        isinstance(value, np.generic) and np.ndim(value) == 0
    )


def _numbers_as_array(value):
    if isinstance(value, list) and value and all(_is_number(item) for item in value):
        return np.asarray(value)
    return value


def as_keras2_arrays(data: Any, count: int | None) -> Any:
    """`data` for a model with `count` inputs (or outputs), lists of numbers
    turned into arrays as Keras 2's `standardize_input_data` did."""
    if not isinstance(data, list) or not data or count is None:
        return data
    if count == 1:
        return _numbers_as_array(data)
    if len(data) == count:
        return [_numbers_as_array(item) for item in data]
    return data


def input_count(model: keras.Model) -> int | None:
    try:
        inputs = model.template.inputs
    except (AttributeError, ValueError):
        return None
    return len(inputs) if inputs else None


def call_data(model: keras.Model, x=None, y=None, sample_weight=None):
    """`(x, y, sample_weight)` of a call, as Keras 2 read them: dicts by the
    model's input and output names (`named_data`), lists of numbers as arrays."""
    if any(isinstance(data, Mapping) for data in (x, y, sample_weight)):
        x, y, sample_weight = named_data.by_name(model, x, y, sample_weight)
    else:
        x = named_data.batches(model, x)
    outputs = _list_outputs(model)
    return (
        as_keras2_arrays(x, input_count(model)),
        as_keras2_arrays(y, outputs),
        as_keras2_arrays(sample_weight, outputs),
    )


def fit_keywords(model: keras.Model, kwargs: dict) -> dict:
    """`fit`'s keyword arguments with `sample_weight` and `validation_data`
    read as `call_data` reads the data."""
    kwargs = dict(kwargs)
    if "sample_weight" in kwargs:
        kwargs["sample_weight"] = call_data(model, sample_weight=kwargs["sample_weight"])[2]
    validation = kwargs.get("validation_data")
    if isinstance(validation, (tuple, list)) and len(validation) in (2, 3):
        kwargs["validation_data"] = type(validation)(call_data(model, *validation))
    elif validation is not None:
        kwargs["validation_data"] = named_data.batches(model, validation)
    return kwargs


def predict_input(x: Any) -> Any:
    """A generator for `predict`, its bare inputs yielded as `(x,)`.

    Keras 2's `predict_generator` took what a generator yielded as the
    inputs unless it was a tuple (then `(x, y)` or `(x, y, sample_weight)`);
    Keras 3 wants a tuple. Read lazily: one element per element read.
    """
    if not isinstance(x, types.GeneratorType):
        return x
    return _as_tuples(x)


def _as_tuples(generator: Iterator) -> Iterator:
    for element in generator:
        yield element if isinstance(element, tuple) else (element,)
