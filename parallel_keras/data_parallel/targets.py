# SPDX-License-Identifier: Apache-2.0
"""Targets, sample weights and metric names as Keras 2 took them.

Keras 2 (keras/engine/training.py and training_utils.py, 2.3) fed each
output's targets and sample weights through its own placeholders:

* A dict of targets or sample weights was read by output name into the
  model's output order (`standardize_input_data`,
  `standardize_sample_or_class_weights`), whatever the model's outputs were:
  `{'ctc': zeros}` for a single-output CTC model, `{'Survival': t, 'aux': a}`
  for a model whose outputs are a list. Keras 3 matches a dict only to a
  model whose outputs are a dict (`KeyError: 0`, keras-team/keras#20992). A
  missing target is an error; a missing sample weight means weights of 1.
* The target placeholders had the dtype of their output
  (`K.placeholder(dtype=K.dtype(self.outputs[i]))`), so float64 NumPy
  targets and integer labels reached custom losses and metrics as float32.
  Keras 3 hands metrics a `tf.data` pipeline's float64 as it is.
* A metric function was logged under its `__name__` (`get_metric_name`),
  prefixed with the output's name when the model has several outputs; Keras
  3 snake-cases it (`Cindex` logs as `cindex`), so a checkpoint path
  `{val_Survival_Cindex}` finds no such log.

The parallel model applies the first two to every batch its loss and
metrics see (arrays, generators, datasets) and the third when it compiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import tensorflow as tf

from parallel_keras.data_parallel import keras2_arguments


def as_keras2_fed(model: keras.Model, targets: Any, outputs: Any, sample_weight: Any):
    """`(targets, sample_weight)` of a step as Keras 2 fed them to `model`'s
    loss and metrics: by output name, in the outputs' dtype."""
    names = getattr(model, "output_names", None) or []
    targets, sample_weight = targets_in_output_order(
        targets, sample_weight, outputs, names, _outputs_with_loss(model, names)
    )
    return as_output_dtype(targets, outputs), sample_weight


def _outputs_with_loss(model: keras.Model, names: list[str]) -> list[str]:
    """The outputs Keras 2 fed targets for: those given a loss."""
    return keras2_arguments.outputs_with_loss(getattr(model, "loss", None), names)


def symbolic_batch_in_output_order(model: keras.Model, batch: Any) -> Any:
    """The batch Keras builds `model`'s loss and metrics from, its dict
    targets in the template's output order (shapes only: no weights)."""
    x, targets, _ = keras.utils.unpack_x_y_sample_weight(batch)
    try:
        outputs = model.template.output
    except (AttributeError, ValueError):
        return batch  # A subclassed template: Keras's own rules.
    if targets is None:
        return batch
    names = getattr(model, "output_names", None) or []
    targets, _ = targets_in_output_order(
        targets, None, outputs, names, _outputs_with_loss(model, names)
    )
    return (x, targets)


def targets_in_output_order(
    targets: Any,
    sample_weight: Any,
    outputs: Any,
    output_names: list[str],
    needed: list[str] | None = None,
) -> tuple[Any, Any]:
    """Dict targets and sample weights as the model's output structure.

    Args:
        targets: The batch's targets (`y`).
        sample_weight: The batch's sample weights, or None.
        outputs: The model's outputs (`y_pred`, or its symbolic outputs),
            whose structure the targets must have.
        output_names: One name per flat output, as the dict keys use them.
        needed: The outputs that must have targets (those with a loss);
            others may be left out of a dict (None). Defaults to all.

    Returns:
        `(targets, sample_weight)`, dicts turned into the outputs' order.

    Raises:
        ValueError: If a dict of targets lacks an output's name.
    """
    if isinstance(outputs, Mapping) or not output_names:
        return targets, sample_weight
    single = not isinstance(outputs, (list, tuple))
    if isinstance(targets, Mapping):
        needed = output_names if needed is None else needed
        missing = [name for name in needed if name not in targets]
        if missing:
            raise ValueError(
                "Targets given as a dict are read by output name, one entry "
                f"per output given a loss: {needed}. Received: targets with keys "
                f"{sorted(map(str, targets))}, with no data for {missing}. "
                "Key the targets by those names, or pass a list in output "
                "order."
            )
        targets = [targets.get(name) for name in output_names]
        if single:
            targets = targets[0]
    elif not single and needed is not None and 0 < len(needed) < len(output_names):
        targets = _fed_only(targets, output_names, needed)
    if not single and needed is not None and 0 < len(needed) < len(output_names):
        sample_weight = _fed_only(sample_weight, output_names, needed)
    if isinstance(sample_weight, Mapping):
        flat_targets = tf.nest.flatten(targets)
        weights = []
        for index, name in enumerate(output_names):
            weight = sample_weight.get(name)
            if weight is None and flat_targets[index] is not None:
                # Keras 2: an output without sample weights weighs each row 1.
                weight = tf.ones(tf.shape(flat_targets[index])[:1])
            weights.append(weight)
        sample_weight = weights[0] if single else weights
    return targets, sample_weight


def _fed_only(value: Any, output_names: list[str], needed: list[str]) -> Any:
    """Targets (or sample weights) given for the outputs with a loss only,
    as a list in output order with None for the others.

    Keras 2 fed only the outputs given a loss: their targets and sample
    weights as a list in output order, or one array when only one output
    has a loss (an output without a loss took no data). Values for every
    output stay as they are.
    """
    if isinstance(value, (list, tuple)) and len(value) == len(needed):
        fed = list(value)
    elif value is not None and not isinstance(value, (list, tuple, Mapping)) and len(needed) == 1:
        fed = [value]
    else:
        return value
    positions = {name: index for index, name in enumerate(needed)}
    return [fed[positions[name]] if name in positions else None for name in output_names]


def as_output_dtype(targets: Any, outputs: Any) -> Any:
    """Numeric targets cast to their output's float dtype, as Keras 2 fed them.

    Under mixed precision an output may be float16; its targets are cast to
    `keras.config.floatx()` instead, so no target loses precision.
    """
    if targets is None:
        return None
    flat_targets = tf.nest.flatten(targets)
    flat_outputs = tf.nest.flatten(outputs)
    if len(flat_targets) != len(flat_outputs):
        return targets
    cast = []
    for target, output in zip(flat_targets, flat_outputs):
        cast.append(_cast_like(target, output))
    return tf.nest.pack_sequence_as(targets, cast)


def _cast_like(target, output):
    if target is None or output is None:
        return target
    output_dtype = tf.as_dtype(keras.backend.standardize_dtype(output.dtype))
    if not output_dtype.is_floating:
        return target
    if output_dtype.size < 4:
        output_dtype = tf.as_dtype(keras.config.floatx())
    target = tf.convert_to_tensor(target)
    if target.dtype == output_dtype or not (
        target.dtype.is_floating or target.dtype.is_integer or target.dtype == tf.bool
    ):
        return target
    return tf.cast(target, output_dtype)


def keras2_metric_names(metrics: Any) -> Any:
    """`metrics` with each metric function named by its `__name__`, as Keras 2
    logged it (Keras 3 would snake-case it); strings and Metric objects stay."""
    if metrics is None or isinstance(metrics, str):
        return metrics
    if isinstance(metrics, Mapping):
        return {key: keras2_metric_names(value) for key, value in metrics.items()}
    if isinstance(metrics, (list, tuple)):
        return type(metrics)(keras2_metric_names(value) for value in metrics)
    if isinstance(metrics, (keras.metrics.Metric, type)):
        return metrics
    name = getattr(metrics, "__name__", None)
    if callable(metrics) and name:
        return keras.metrics.MeanMetricWrapper(metrics, name=name)
    return metrics
