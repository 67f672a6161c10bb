# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `K.function` and learning phase, on Keras 3 models.

`K.function([model.input, K.learning_phase()], [layer.output])` was how
Keras 2 scripts read intermediate activations (feature maps, embeddings,
Monte-Carlo dropout). Keras 3 has no backend functions; `function` builds a
`keras.Model` of the same inputs and outputs and calls it, with the
learning phase given as `training`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np


class _LearningPhase:
    """The placeholder `learning_phase()` returns: 0 infers, 1 trains."""

    def __repr__(self) -> str:
        return "parallel_keras.compat.learning_phase()"


_LEARNING_PHASE = _LearningPhase()
_default_phase: list[int | None] = [None]


def learning_phase() -> Any:
    """Keras 2's `K.learning_phase()`: the placeholder of the learning phase.

    Give it to `function` among the inputs and feed 0 (inference) or 1
    (training) in its place. Modernise: call the model with
    `training=True/False`.

    Returns:
        The learning-phase placeholder.
    """
    return _LEARNING_PHASE


def set_learning_phase(value: int) -> None:
    """Keras 2's `K.set_learning_phase(0 or 1)`, for `function` calls without one.

    Modernise: call the model with `training=` (Keras 3 has no global phase;
    `fit` trains and `predict` infers whatever this says).

    Args:
        value: 0 for inference, 1 for training.

    Raises:
        ValueError: If `value` is not 0 or 1.
    """
    if value not in (0, 1):
        raise ValueError(
            f"The learning phase is 0 (inference) or 1 (training). Received: value={value!r}."
        )
    _default_phase[0] = int(value)


class Function:
    """A Keras 2 backend function: a list of input values -> a list of arrays."""

    def __init__(self, inputs: Sequence[Any], outputs: Any, name: str | None = None):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self._phase_index = next(
            (index for index, item in enumerate(inputs) if item is _LEARNING_PHASE), None
        )
        tensors = [item for item in inputs if item is not _LEARNING_PHASE]
        self._single = not isinstance(outputs, (list, tuple))
        outputs_list = [outputs] if self._single else list(outputs)
        try:
            self._outputs_model = keras.Model(tensors, outputs_list, name=name)
        except (ValueError, TypeError) as error:
            raise ValueError(
                "function(inputs, outputs) needs outputs computed from the inputs "
                f"by Keras layers and keras.ops. Received: inputs={tensors}, "
                f"outputs={outputs_list} ({error}). Pass the model's inputs "
                "(model.inputs) and the layer outputs you read."
            ) from error
        self._arity = len(tensors)

    def __call__(self, values: Sequence[Any]) -> Any:
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        training = _default_phase[0]
        if self._phase_index is not None:
            if len(values) != self._arity + 1:
                raise ValueError(
                    f"This function takes {self._arity + 1} inputs, the learning "
                    f"phase among them. Received: {len(values)} values."
                )
            training = int(np.asarray(values.pop(self._phase_index)))
        if len(values) != self._arity:
            raise ValueError(
                f"This function takes {self._arity} inputs. Received: {len(values)} values."
            )
        results = self._outputs_model(values, training=bool(training))
        if not isinstance(results, (list, tuple)):  # Keras 3 unwraps one output.
            results = [results]
        arrays = [keras.ops.convert_to_numpy(result) for result in results]
        return arrays[0] if self._single else arrays


def function(
    inputs: Sequence[Any],
    outputs: Any,
    updates: Any = None,
    name: str | None = None,
    **kwargs: Any,
) -> Function:
    """Keras 2's `K.function(inputs, outputs)`: call it with a list of values.

    `f = function([model.input, learning_phase()], [layer.output])` then
    `f([x, 0])` returns `[activations]` as NumPy arrays, as Keras 2 did; a
    single output (not in a list) comes back alone. The learning phase,
    when among the inputs, is fed 0 (inference) or 1 (training: dropout
    and batch statistics on). Modernise: `keras.Model(model.inputs,
    [layer.output])(x, training=False)`.

    Args:
        inputs: Keras tensors (`model.input`, a layer's input or output),
            and optionally `learning_phase()`.
        outputs: A Keras tensor or a list of them, computed from `inputs`.
        updates: Keras 2's variable updates to run with each call. Only
            None is accepted. Defaults to None.
        name: Name of the model built. Defaults to None.
        **kwargs: Keras 2's session arguments; ignored.

    Returns:
        The callable.

    Raises:
        ValueError: If `updates` is given (a training step: write it with
            `tf.GradientTape`) or the outputs do not come from the inputs.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> inputs = keras.Input((3,))
    >>> hidden = keras.layers.Dense(2, kernel_initializer="ones")(inputs)
    >>> model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    >>> read = compat.function([model.input, compat.learning_phase()], [hidden])
    >>> read([np.ones((1, 3)), 0])[0]
    array([[3., 3.]], dtype=float32)
    """
    del kwargs
    if updates:
        raise ValueError(
            "function(updates=...) ran Keras 2 variable updates, a training "
            "step; Keras 3 has none. Received: updates with "
            f"{len(updates)} entries. Write the step as a custom train_step "
            "or with tf.GradientTape and optimizer.apply_gradients."
        )
    return Function(inputs, outputs, name=name)
