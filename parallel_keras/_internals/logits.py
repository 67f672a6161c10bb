# SPDX-License-Identifier: Apache-2.0
"""Keras's logits behind a sigmoid or softmax output, kept through a gather.

Upstream surface: Keras 3's TensorFlow backend `_get_logits`
(backend/tensorflow/nn.py), used by `binary_crossentropy`,
`categorical_crossentropy` and `sparse_categorical_crossentropy` (the ops,
the losses, the metrics and the legacy `keras.backend` ones alike). Given
probabilities, they compute from the logits instead of clipping the
probabilities when the tensor

1. carries the private `_keras_logits` attribute, set by
   `keras.activations.sigmoid`/`softmax`, the backend's `sigmoid`/`softmax`
   and the legacy backend's: used whatever the crossentropy; or
2. was produced by a `Sigmoid` op (binary) or `Softmax` op (categorical):
   its input is the logits.

On one device a model's output is that tensor. A parallel model that
gathers its replicas' outputs (`ReplicaContext.all_gather`), masks their
rows or concatenates them computes on new tensors: neither holds, the loss
clips (a saturated sigmoid unit stops training) and its value differs.
`carrying_logits` gives the new tensor what the output had: the attribute,
or the same op over the same transformation of the logits.

Read in Keras 3.5.0 and 3.15.1 (the same `_get_logits`, attribute and op
types); `tests/internals/test_logits.py` fails when an upgrade changes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

_ATTRIBUTE = "_keras_logits"
_OP_TYPES = ("Sigmoid", "Softmax")


def output_logits(output) -> tuple[tf.Tensor, str] | None:
    """`(logits, how)` Keras reads from `output`, or None.

    `how` is `"attribute"` or the op type (`"Sigmoid"`, `"Softmax"`).
    """
    if output is None or not isinstance(output, tf.Tensor):
        return None
    logits = getattr(output, _ATTRIBUTE, None)
    if logits is not None:
        return logits, "attribute"
    if isinstance(output, tf.__internal__.EagerTensor):
        return None
    op = getattr(output, "op", None)
    if op is not None and op.type in _OP_TYPES and len(op.inputs) == 1:
        return op.inputs[0], op.type
    return None


def carrying_logits(result: tf.Tensor, logits: tf.Tensor, how: str) -> tf.Tensor:
    """`result` as Keras reads it: computed from `logits` where `output` was.

    `result` and `logits` are the same transformation (gather, mask,
    concatenation) of an output and of its `output_logits`.
    """
    if how == "attribute":
        result = tf.identity(result)
        setattr(result, _ATTRIBUTE, logits)
        return result
    # The same op over the transformed logits: the same values, and the op
    # type Keras looks for.
    if how == "Sigmoid":
        return tf.nn.sigmoid(logits)
    return tf.nn.softmax(logits)


def map_keeping_logits(function: Callable[[tf.Tensor], tf.Tensor], output):
    """`function(output)`, carrying `output`'s logits through `function`."""
    found = output_logits(output)
    result = function(output)
    if found is None:
        return result
    logits, how = found
    return carrying_logits(result, function(logits), how)


def concat_keeping_logits(values: Sequence[tf.Tensor], axis: int = 0) -> tf.Tensor:
    """`tf.concat(values)`, with logits where every value carries them alike."""
    result = tf.concat(list(values), axis=axis)
    found = [output_logits(value) for value in values]
    if not found or any(item is None for item in found):
        return result
    kinds = {how for _, how in found}  # type: ignore[misc]
    if len(kinds) != 1:
        return result
    logits = tf.concat([logits for logits, _ in found], axis=axis)  # type: ignore[misc]
    return carrying_logits(result, logits, kinds.pop())
