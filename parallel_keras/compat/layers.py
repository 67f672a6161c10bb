# SPDX-License-Identifier: Apache-2.0
"""Keras 2 base classes projects subclassed: `_Merge`, `Container`, `Network`.

`from keras.layers.merge import _Merge` was the base of the WGAN-GP's
`RandomWeightedAverage` and other element-wise merges: a subclass writes
`_merge_function(inputs)` over the list of input tensors. Keras 3 keeps its
merge base private; `Merge` here is the same contract on a public
`keras.layers.Layer`.
"""

from __future__ import annotations

import functools
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


def obtain_input_shape(
    input_shape: Any,
    default_size: int,
    min_size: int,
    data_format: str,
    require_flatten: bool,
    weights: Any = None,
) -> tuple:
    """Keras 2's `imagenet_utils._obtain_input_shape`: an application's input shape.

    The shape a Keras 2 application model (and the EfficientNet/ResNeXt code
    copied from them) builds its input with: `input_shape` checked against
    `min_size` and the ImageNet weights' 3 channels, or the default
    (`default_size` square, 3 channels; spatial sizes None without a flatten
    top). Modernise: pass `input_shape` explicitly, e.g. `(224, 224, 3)`.

    Args:
        input_shape: The shape given by the user, or None.
        default_size: The side the ImageNet weights were trained at.
        min_size: The smallest side the model accepts.
        data_format: `'channels_first'` or `'channels_last'`.
        require_flatten: Whether the model ends with a flatten top (then the
            shape must be fully known).
        weights: `'imagenet'` or anything else. Defaults to None.

    Returns:
        The input shape, a tuple of 3.

    Raises:
        ValueError: If the shape does not suit the model, as Keras 2 raised.
    """
    channels_first = data_format == "channels_first"

    def shaped(side: Any, channels: Any) -> tuple:
        return (channels, side, side) if channels_first else (side, side, channels)

    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if channels_first else input_shape[-1]
        default_shape = shaped(default_size, channels)
    else:
        default_shape = shaped(default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default_shape:
            raise ValueError(
                "With include_top=True and the imagenet weights, `input_shape` must be "
                f"{default_shape}. Received: input_shape={input_shape}"
            )
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError(
                f"`input_shape` must be a tuple of three integers. Received: {input_shape}"
            )
        channels = input_shape[0] if channels_first else input_shape[-1]
        sides = input_shape[1:] if channels_first else input_shape[:2]
        if weights == "imagenet" and channels != 3:
            raise ValueError(
                f"The imagenet weights take 3 input channels. Received: input_shape={input_shape}"
            )
        if any(side is not None and side < min_size for side in sides):
            raise ValueError(
                f"Input size must be at least {min_size}x{min_size}. "
                f"Received: input_shape={input_shape}"
            )
        result = tuple(input_shape)
    else:
        result = default_shape if require_flatten else shaped(None, 3)
    if require_flatten and None in result:
        raise ValueError(
            f"With include_top=True, `input_shape` must be static. Received: input_shape={result}"
        )
    return result


def initial_weights(layer: keras.layers.Layer, weights: Any) -> keras.layers.Layer:
    """Keras 2's `weights=` layer argument: the layer starts from these values.

    Keras 2 layers took `weights=[kernel, bias, ...]` (every layer, e.g.
    `Dense(6, weights=[W, b])`, `Embedding(n, d, weights=[matrix])`) and set
    them with `set_weights` right after the layer was built, on its first
    call. Keras 3 layers reject the argument. This sets them at the same
    moment: after the layer's own `build`, or now if it is built already.
    Modernise: pass the values as initializers, e.g.
    `Dense(6, kernel_initializer=keras.initializers.Constant(W),
    bias_initializer=keras.initializers.Constant(b))`.

    Args:
        layer: A Keras layer.
        weights: What Keras 2's `weights=` took: the list of arrays
            `layer.get_weights()` returns once built.

    Returns:
        `layer`, which sets `weights` when it is built.

    Raises:
        ValueError: When the layer is built, if `weights` does not match its
            weights (their number or shapes), as Keras 2 raised.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> dense = compat.initial_weights(keras.layers.Dense(1), [np.full((2, 1), 2.0), np.ones(1)])
    >>> keras.ops.convert_to_numpy(dense(np.ones((1, 2))))
    array([[5.]], dtype=float32)
    """
    if not isinstance(layer, keras.layers.Layer):
        raise TypeError(
            "initial_weights sets the starting weights of a Keras layer. "
            f"Received: layer of type {type(layer).__name__}. Pass the layer "
            "the Keras 2 `weights=` argument was given to."
        )
    if weights is None:
        return layer
    if layer.built:
        layer.set_weights(weights)
        return layer
    build = layer.build

    # Keras reads the build signature to pass the input shapes: wraps keeps it.
    @functools.wraps(build)
    def build_then_set(*args: Any, **kwargs: Any) -> None:
        build(*args, **kwargs)
        layer.set_weights(weights)

    layer.build = build_then_set
    return layer


class Keras2Weights:
    """Saves and loads every weight a layer subclass has, as Keras 2 did.

    Keras 2 saved a layer's `weights` (trainable, then non-trainable) in
    the order it created them. Keras 3's `Dense`, `Conv*`, `Embedding` and
    `EinsumDense` save only their kernel and bias (their quantization
    layout), yet check on loading that the file holds every variable the
    layer has: a Keras 2 subclass that adds its own weight in `build` (a
    spectral-norm `ConvSN2D` with its `sn` vector) writes files it cannot
    read back. Put this class first among the subclass's bases: the layer
    then saves and loads all its variables, as `keras.layers.Layer` does.
    Quantizing or LoRA-enabling such a layer is not supported (Keras 2 had
    neither).

    To modernise: override `save_own_variables`/`load_own_variables` in the
    subclass, or derive it from `keras.layers.Layer` and create every
    weight in `build`.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> class ScaledDense(compat.Keras2Weights, keras.layers.Dense):
    ...     def build(self, input_shape):
    ...         super().build(input_shape)
    ...         self.scale = self.add_weight(shape=(), initializer="ones", trainable=False)
    >>> layer = ScaledDense(2)
    >>> layer.build((None, 3))
    >>> store = {}
    >>> layer.save_own_variables(store)
    >>> len(store)
    3
    """

    def save_own_variables(self, store: Any) -> None:
        keras.layers.Layer.save_own_variables(self, store)

    def load_own_variables(self, store: Any) -> None:
        keras.layers.Layer.load_own_variables(self, store)
