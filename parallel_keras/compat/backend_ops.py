# SPDX-License-Identifier: Apache-2.0
"""Keras 2 backend functions Keras 3 dropped, with Keras 2's TF-backend meaning.

Custom layers and losses of Keras 2 projects (partial convolutions, Gram
matrices, attention) called `K.ones`, `K.bias_add`, `K.spatial_2d_padding`,
`K.batch_dot`, ... which have no function of the same meaning in `keras.ops`
(a different signature, a data-format rule, or a variable where keras.ops
gives a tensor). Each function here computes what Keras 2.2-2.3's TensorFlow
backend computed, with `keras.ops`, so it works on Keras 3's symbolic tensors
as well as on TF tensors inside a layer's `call`. Each docstring says how to
modernise it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf


def _data_format(data_format: str | None) -> str:
    if data_format is None:
        return keras.backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(
            "data_format is 'channels_first' or 'channels_last' (or None: "
            f"keras.backend.image_data_format()). Received: data_format={data_format!r}."
        )
    return data_format


def _filled(value: Any, name: str | None) -> Any:
    # Keras 2 returned a variable (K.set_value could change it) when the
    # shape was fully known. A tf.Variable, not a keras.Variable: Keras 2
    # layers did not count it among their weights, and a Keras 3 layer only
    # tracks keras.Variables. Inside a traced function (a loss) a variable
    # cannot be created at each call; its value is what Keras 2 read.
    if tf.executing_eagerly() and None not in tuple(value.shape):
        return tf.Variable(value, trainable=False, name=name)
    return value


def zeros(shape: Sequence[int], dtype: str | None = None, name: str | None = None) -> Any:
    """Keras 2's `K.zeros`: a variable of zeros (dtype None: floatx()).

    Modernise: `keras.ops.zeros(shape, dtype)` for a constant, or
    `self.add_weight(shape, initializer='zeros', trainable=False)` in a layer.
    """
    return _filled(tf.zeros(shape, dtype=dtype or keras.backend.floatx()), name)


def ones(shape: Sequence[int], dtype: str | None = None, name: str | None = None) -> Any:
    """Keras 2's `K.ones`: a variable of ones (dtype None: floatx()).

    Modernise: `keras.ops.ones(shape, dtype)` for a constant, or
    `self.add_weight(shape, initializer='ones', trainable=False)` in a layer.
    """
    return _filled(tf.ones(shape, dtype=dtype or keras.backend.floatx()), name)


def variable(
    value: Any,
    dtype: str | None = None,
    name: str | None = None,
    constraint: Any = None,
) -> Any:
    """Keras 2's `K.variable`: a `tf.Variable` holding `value` (dtype None: floatx()).

    As in Keras 2.2-2.3's TensorFlow backend: `value` (a NumPy array, a list,
    a number or a tensor) is converted to `dtype`, and `constraint` is kept on
    the variable. It is a `tf.Variable`, not a `keras.Variable`: a Keras 2
    layer did not count a `K.variable` among its weights, and a Keras 3 layer
    only tracks `keras.Variable`s, so the layer's weights stay the same.

    Modernise: `keras.Variable(value, dtype=dtype, trainable=...)`, or
    `self.add_weight(...)` in a layer that should save it with its weights.
    """
    dtype = dtype or keras.backend.floatx()
    if not tf.is_tensor(value):
        # Keras 2 converted the value to the dtype (an int array to floatx()).
        value = np.asarray(value).astype(tf.as_dtype(dtype).as_numpy_dtype)
    return tf.Variable(value, dtype=tf.as_dtype(dtype), name=name, constraint=constraint)


def constant(
    value: Any,
    dtype: str | None = None,
    shape: Sequence[int] | None = None,
    name: str | None = None,
) -> Any:
    """Keras 2's `K.constant`: `tf.constant(value, dtype, shape)` (dtype None: floatx()).

    A scalar `value` with a `shape` fills that shape, as `tf.constant` does
    (`keras.ops.convert_to_tensor` takes no shape).

    Modernise: `keras.ops.convert_to_tensor(value, dtype)`, or
    `keras.ops.full(shape, value, dtype)` for a filled shape.
    """
    return tf.constant(value, dtype=dtype or keras.backend.floatx(), shape=shape, name=name)


def _pad(x: Any, spatial: Iterable[Sequence[int]], data_format: str) -> Any:
    pattern = [[0, 0], *([int(p[0]), int(p[1])] for p in spatial), [0, 0]]
    if data_format == "channels_first":
        pattern = [pattern[0], pattern[-1], *pattern[1:-1]]
    return keras.ops.pad(x, pattern)


def _pairs(padding: Any, n: int, what: str) -> list[Sequence[int]]:
    if len(padding) != n or any(len(p) != 2 for p in padding):
        raise ValueError(
            f"{what} takes {n} (before, after) pairs of padding. Received: padding={padding!r}."
        )
    return list(padding)


def temporal_padding(x: Any, padding: Sequence[int] = (1, 1)) -> Any:
    """Keras 2's `K.temporal_padding`: zeros before/after axis 1 of a 3D tensor.

    Modernise: `keras.ops.pad(x, [[0, 0], [before, after], [0, 0]])` or a
    `keras.layers.ZeroPadding1D` layer.
    """
    if len(padding) != 2:
        raise ValueError(
            f"temporal_padding takes one (before, after) pair. Received: padding={padding!r}."
        )
    return _pad(x, [padding], "channels_last")


def spatial_2d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1)), data_format: str | None = None
) -> Any:
    """Keras 2's `K.spatial_2d_padding`: zeros around the two spatial axes.

    Modernise: `keras.ops.pad` with the pattern of your data format, or a
    `keras.layers.ZeroPadding2D` layer.
    """
    return _pad(x, _pairs(padding, 2, "spatial_2d_padding"), _data_format(data_format))


def spatial_3d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None
) -> Any:
    """Keras 2's `K.spatial_3d_padding`: zeros around the three spatial axes.

    Modernise: `keras.ops.pad` with the pattern of your data format, or a
    `keras.layers.ZeroPadding3D` layer.
    """
    return _pad(x, _pairs(padding, 3, "spatial_3d_padding"), _data_format(data_format))


def bias_add(x: Any, bias: Any, data_format: str | None = None) -> Any:
    """Keras 2's `K.bias_add`: a 1D bias on the channel axis (or a full-shape bias).

    The channel axis is the last one, or axis 1 with `channels_first`
    (None: `keras.backend.image_data_format()`). Modernise: `x + bias` for
    channels-last tensors, `x + keras.ops.reshape(bias, (1, -1, 1, 1))` for
    channels-first 4D ones.
    """
    data_format = _data_format(data_format)
    bias_shape = tuple(bias.shape)
    rank = len(x.shape)
    if len(bias_shape) not in (1, rank - 1):
        raise ValueError(
            f"The bias has 1 or {rank - 1} dimensions for a {rank}D input. "
            f"Received: bias.shape={bias_shape}."
        )
    if len(bias_shape) == 1:
        new_shape = (1,) * (rank - 1) + bias_shape
    else:
        new_shape = (1, *bias_shape)
    if data_format == "channels_first" and rank > 2:
        new_shape = (new_shape[0], new_shape[-1], *new_shape[1:-1])
    return x + keras.ops.reshape(bias, new_shape)


def conv1d(
    x: Any,
    kernel: Any,
    strides: int = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: int = 1,
) -> Any:
    """Keras 2's `K.conv1d`, including `padding='causal'` (zeros on the left only).

    Modernise: `keras.ops.conv(x, kernel, strides, padding, data_format,
    dilation_rate)`, with `keras.ops.pad(x, [[0, 0], [left, 0], [0, 0]])`
    first for a causal convolution.
    """
    data_format = _data_format(data_format)
    if padding == "causal":
        if data_format != "channels_last":
            raise ValueError(
                "A causal conv1d reads channels-last (temporal) data. "
                f"Received: data_format={data_format!r}."
            )
        x = temporal_padding(x, (int(dilation_rate) * (int(kernel.shape[0]) - 1), 0))
        padding = "valid"
    return keras.ops.conv(x, kernel, strides, padding, data_format, dilation_rate)


def tile(x: Any, n: Any) -> Any:
    """Keras 2's `K.tile(x, n)`: `tf.tile`, multiples computed in the graph too.

    `n` is an int (for a 1-D `x`) or one multiple per axis of `x`: a list,
    or a 1-D tensor such as `K.stack([batch_size])` of a symbolic batch
    size, which `keras.ops.tile` refuses (it iterates the multiples in
    Python). Modernise: `tf.tile(x, multiples)`, or `keras.ops.tile` with
    a list of ints.

    Example:

    >>> import keras
    >>> from parallel_keras import compat
    >>> keras.ops.convert_to_numpy(compat.tile(keras.ops.ones((1, 2)), [3, 1])).shape
    (3, 2)
    """
    if isinstance(n, int):
        n = [n]
    return tf.tile(x, n)


def batch_flatten(x: Any) -> Any:
    """Keras 2's `K.batch_flatten`: each sample as one row, in memory order.

    No data-format transpose (unlike `keras.layers.Flatten` under
    `channels_first`). Modernise: `keras.ops.reshape(x, (-1, n))` with `n`
    the product of the non-batch dimensions.
    """
    rest = tuple(x.shape[1:])
    if None not in rest:
        size = 1
        for dimension in rest:
            size *= int(dimension)
        return keras.ops.reshape(x, (-1, size))
    return keras.ops.reshape(x, (keras.ops.shape(x)[0], -1))


def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """Keras 2.2's `K.batch_dot`: a dot product of each sample of `x` with that of `y`.

    `axes` (an int, a pair, or None: the last axis of `x` and the one before
    the last of `y`) are the axes summed over; a 2D result of rank 1 gets a
    trailing axis. Modernise: `keras.ops.einsum` with the axes spelled out
    (`'bij,bjk->bik'` for 3D inputs and the default axes).
    """
    if isinstance(axes, int):
        axes = (axes, axes)
    x_ndim, y_ndim = len(x.shape), len(y.shape)
    if axes is None:
        axes = (x_ndim - 1, y_ndim - 2)
    if any(isinstance(axis, (list, tuple)) for axis in axes):
        raise ValueError(f"batch_dot sums over one axis of each input. Received: axes={axes!r}.")
    diff = abs(x_ndim - y_ndim)
    for _ in range(diff):
        if x_ndim > y_ndim:
            y = keras.ops.expand_dims(y, -1)
        else:
            x = keras.ops.expand_dims(x, -1)
    if len(x.shape) == 2 and len(y.shape) == 2:
        if axes[0] == axes[1]:
            out = keras.ops.sum(x * y, axis=axes[0])
        else:
            out = keras.ops.sum(keras.ops.transpose(x, (1, 0)) * y, axis=axes[1])
    else:
        if axes[0] != len(x.shape) - 1:
            x = keras.ops.swapaxes(x, -1, -2)
        if axes[1] == len(y.shape) - 1:
            y = keras.ops.swapaxes(y, -1, -2)
        out = keras.ops.matmul(x, y)
    if diff:
        start = x_ndim + y_ndim - 3 if x_ndim > y_ndim else x_ndim - 1
        out = keras.ops.squeeze(out, axis=tuple(range(start, start + diff)))
    if len(out.shape) == 1:
        out = keras.ops.expand_dims(out, 1)
    return out


def batch_get_value(tensors: Iterable[Any]) -> list:
    """Keras 2's `K.batch_get_value`: the values of variables/tensors as NumPy arrays.

    Modernise: `[keras.ops.convert_to_numpy(v) for v in tensors]`.
    """
    return [keras.ops.convert_to_numpy(tensor) for tensor in tensors]


def batch_set_value(tuples: Iterable[tuple[Any, Any]]) -> None:
    """Keras 2's `K.batch_set_value`: assigns each (variable, value) pair.

    Modernise: `variable.assign(value)` for each pair.
    """
    for variable, value in tuples:
        variable.assign(value)


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    """Keras 2's `K.switch`: one branch by a scalar condition, else element by element.

    A scalar condition picks a branch (each may be a function, called only
    when picked); a tensor condition of lower rank than the branches picks
    whole rows, a full one picks elements (Keras 2 padded the condition's
    shape with trailing 1s). Modernise: `keras.ops.cond(c, then_fn,
    else_fn)` for a scalar condition, `keras.ops.where(c, a, b)` otherwise.
    """
    condition = keras.ops.cast(condition, "bool")
    if len(condition.shape) == 0:

        def then_fn() -> Any:
            return then_expression() if callable(then_expression) else then_expression

        def else_fn() -> Any:
            return else_expression() if callable(else_expression) else else_expression

        return keras.ops.cond(condition, then_fn, else_fn)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    rank = len(keras.ops.shape(then_expression))
    if len(condition.shape) > rank:
        raise ValueError(
            "The condition of switch has at most the rank of its branches. "
            f"Received: condition.shape={tuple(condition.shape)}, a branch of rank {rank}."
        )
    for _ in range(rank - len(condition.shape)):
        condition = keras.ops.expand_dims(condition, -1)
    return keras.ops.where(condition, then_expression, else_expression)
