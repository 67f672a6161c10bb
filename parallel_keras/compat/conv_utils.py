# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.utils.conv_utils`: the shape helpers custom layers imported.

Keras 2 scripts wrote custom convolution and pooling layers with these
helpers; Keras 3 keeps them private. Same arguments and results as Keras 2.
Modernise: write the few lines each computes in the layer (Keras 3's
`keras.layers.Conv2D` and friends accept ints or tuples themselves).
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np


def normalize_tuple(value: Any, n: int, name: str) -> tuple:
    """An int or an iterable of `n` ints as a tuple of `n` ints (Keras 2).

    Args:
        value: An int, or an iterable of `n` ints.
        n: The length of the tuple.
        name: The argument's name, for the error.

    Returns:
        A tuple of `n` ints.

    Raises:
        ValueError: If `value` is neither, as Keras 2 raised.

    Example:

    >>> from parallel_keras.compat import conv_utils
    >>> conv_utils.normalize_tuple(3, 2, "kernel_size")
    (3, 3)
    """
    if isinstance(value, int):
        return (value,) * n
    try:
        value_tuple = tuple(value)
    except TypeError:
        raise ValueError(
            f"The `{name}` argument must be a tuple of {n} integers. Received: {value!r}"
        ) from None
    if len(value_tuple) != n:
        raise ValueError(
            f"The `{name}` argument must be a tuple of {n} integers. Received: {value!r}"
        )
    for single in value_tuple:
        try:
            int(single)
        except (ValueError, TypeError):
            raise ValueError(
                f"The `{name}` argument must be a tuple of {n} integers. Received: "
                f"{value!r} including element {single!r} of type {type(single)}"
            ) from None
    return value_tuple


def normalize_padding(value: str) -> str:
    """`'valid'`, `'same'` or `'causal'`, lower-cased (Keras 2)."""
    padding = value.lower()
    if padding not in {"valid", "same", "causal"}:
        raise ValueError(
            "The `padding` argument must be one of 'valid', 'same' (or 'causal' "
            f"for Conv1D). Received: {value!r}"
        )
    return padding


def normalize_data_format(value: str | None) -> str:
    """`'channels_first'` or `'channels_last'`; None is Keras's default (Keras 2)."""
    if value is None:
        value = keras.backend.image_data_format()
    data_format = value.lower()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(
            "The `data_format` argument must be one of 'channels_first', "
            f"'channels_last'. Received: {value!r}"
        )
    return data_format


def conv_output_length(
    input_length: int | None, filter_size: int, padding: str, stride: int, dilation: int = 1
) -> int | None:
    """The output length of a convolution along one axis (Keras 2)."""
    if input_length is None:
        return None
    dilated_filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        output_length = input_length
    elif padding == "valid":
        output_length = input_length - dilated_filter_size + 1
    elif padding == "full":
        output_length = input_length + dilated_filter_size - 1
    else:
        raise ValueError(f"Unknown padding. Received: padding={padding!r}")
    return (output_length + stride - 1) // stride


def conv_input_length(
    output_length: int | None, filter_size: int, padding: str, stride: int
) -> int | None:
    """The input length a convolution's output length came from (Keras 2)."""
    if output_length is None:
        return None
    if padding == "same":
        pad = filter_size // 2
    elif padding == "valid":
        pad = 0
    elif padding == "full":
        pad = filter_size - 1
    else:
        raise ValueError(f"Unknown padding. Received: padding={padding!r}")
    return (output_length - 1) * stride - 2 * pad + filter_size


def deconv_length(
    dim_size: int | None,
    stride_size: int,
    kernel_size: int,
    padding: str,
    output_padding: int | None,
    dilation: int = 1,
) -> int | None:
    """The output length of a transposed convolution along one axis (Keras 2)."""
    if dim_size is None:
        return None
    kernel_size = kernel_size + (kernel_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return dim_size * stride_size + max(kernel_size - stride_size, 0)
        if padding == "full":
            return dim_size * stride_size - (stride_size + kernel_size - 2)
        return dim_size * stride_size
    if padding == "same":
        pad = kernel_size // 2
    elif padding == "valid":
        pad = 0
    else:
        pad = kernel_size - 1
    return (dim_size - 1) * stride_size + kernel_size - 2 * pad + output_padding


deconv_output_length = deconv_length


def convert_kernel(kernel: np.ndarray) -> np.ndarray:
    """A convolution kernel flipped along its spatial axes (Theano <-> TensorFlow)."""
    kernel = np.asarray(kernel)
    if not 3 <= kernel.ndim <= 5:
        raise ValueError(f"Invalid kernel shape. Received: {kernel.shape}")
    slices = [slice(None, None, -1) for _ in range(kernel.ndim)]
    no_flip = (slice(None, None), slice(None, None))
    slices[-2:] = no_flip
    return np.copy(kernel[tuple(slices)])
