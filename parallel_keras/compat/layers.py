# SPDX-License-Identifier: Apache-2.0
"""Keras 2 base classes projects subclassed: `_Merge`, `Container`, `Network`.

`from keras.layers.merge import _Merge` was the base of the WGAN-GP's
`RandomWeightedAverage` and other element-wise merges: a subclass writes
`_merge_function(inputs)` over the list of input tensors. Keras 3 keeps its
merge base private; `Merge` here is the same contract on a public
`keras.layers.Layer`.
"""

from __future__ import annotations

from typing import Any

import keras


class Merge(keras.layers.Layer):
    """Keras 2's `keras.layers.merge._Merge`: subclass it and write `_merge_function`.

    The layer takes a list of at least two tensors and returns
    `self._merge_function(inputs)`; its output shape is the broadcast of
    the input shapes (an element-wise merge), as Keras 2's was. Modernise:
    subclass `keras.layers.Layer` with `call(self, inputs)` returning what
    `_merge_function` computed.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> class Average(compat.Merge):
    ...     def _merge_function(self, inputs):
    ...         return (inputs[0] + inputs[1]) / 2
    >>> keras.ops.convert_to_numpy(Average()([np.ones((1, 2)), np.zeros((1, 2))]))
    array([[0.5, 0.5]], dtype=float32)
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _merge_function(self, inputs: list) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} subclasses Merge (Keras 2's _Merge) and must "
            "define _merge_function(self, inputs), the merge of the list of inputs."
        )

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape[0], (list, tuple)) or len(input_shape) < 2:
            raise ValueError(
                f"A merge layer is called on a list of at least 2 inputs. Received: "
                f"input_shape={input_shape}"
            )

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                f"A merge layer is called on a list of inputs. Received: inputs={inputs}"
            )
        inputs = [keras.ops.convert_to_tensor(x, dtype=self.compute_dtype) for x in inputs]
        return self._merge_function(list(inputs))

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape: list = list(input_shape[0])
        for other in input_shape[1:]:
            other = list(other)
            if len(other) > len(shape):
                shape, other = other, shape
            offset = len(shape) - len(other)
            for index, size in enumerate(other):
                mine = shape[offset + index]
                if mine is None or size is None:
                    shape[offset + index] = None
                elif mine == 1:
                    shape[offset + index] = size
        return tuple(shape)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None or all(m is None for m in mask):
            return None
        masks = [keras.ops.expand_dims(m, 0) for m in mask if m is not None]
        return keras.ops.all(keras.ops.concatenate(masks, axis=0), axis=0)


class Container(keras.Model):
    """Keras 1's `Container` and Keras 2's `Network`: a functional model.

    `Container(inputs, outputs)` / `Network(inputs, outputs)` built a model
    of layers without training methods; Keras 3 has only `Model`, which
    these are. Keras 1's `input=`/`output=` keywords are accepted.
    Modernise: `keras.Model(inputs, outputs)`.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        kwargs = _keras1_keywords(kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **_keras1_keywords(kwargs))


def _keras1_keywords(kwargs: dict) -> dict:
    kwargs = dict(kwargs)
    for old, new in (("input", "inputs"), ("output", "outputs")):
        if old in kwargs and new not in kwargs:
            kwargs[new] = kwargs.pop(old)
    return kwargs


class Network(Container):
    """Keras 2's `keras.engine.network.Network`: a functional model (see `Container`)."""
