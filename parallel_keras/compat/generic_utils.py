# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.utils.generic_utils`: the helpers scripts imported from it.

Keras 3 keeps `Progbar`, `get_custom_objects`, `CustomObjectScope`,
`custom_object_scope` and `(de)serialize_keras_object` public (re-exported
here under the Keras 2 module's name); the small list helpers it made
private are here with Keras 2's behaviour. Modernise: import the public
ones from `keras.utils` / `keras.saving` and inline the list helpers.
"""

from __future__ import annotations

import codecs
import inspect
import marshal
import types
from collections.abc import Callable
from typing import Any

from keras.saving import deserialize_keras_object as deserialize_keras_object
from keras.saving import serialize_keras_object as serialize_keras_object
from keras.utils import CustomObjectScope as CustomObjectScope
from keras.utils import Progbar as Progbar
from keras.utils import custom_object_scope as custom_object_scope
from keras.utils import get_custom_objects as get_custom_objects


def to_list(x: Any, allow_tuple: bool = False) -> list:
    """`x` as a list: a list stays, anything else is wrapped (Keras 2)."""
    if isinstance(x, list):
        return x
    if allow_tuple and isinstance(x, tuple):
        return list(x)
    return [x]


def unpack_singleton(x: Any) -> Any:
    """The only element of a one-element list, else `x` (Keras 2)."""
    if isinstance(x, list) and len(x) == 1:
        return x[0]
    return x


def has_arg(fn: Callable, name: str, accept_all: bool = False) -> bool:
    """Whether `fn` takes an argument `name` (or any, with `accept_all` and **kwargs)."""
    parameters = inspect.signature(fn).parameters
    if accept_all and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return True
    parameter = parameters.get(name)
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def object_list_uid(object_list: Any) -> str:
    """The ids of the objects, joined by ', ' (Keras 2)."""
    return ", ".join(str(abs(id(x))) for x in to_list(object_list, allow_tuple=True))


def is_all_none(iterable_or_element: Any) -> bool:
    """Whether every element (or the one element) is None (Keras 2)."""
    return all(x is None for x in to_list(iterable_or_element, allow_tuple=True))


def slice_arrays(arrays: Any, start: Any = None, stop: Any = None) -> Any:
    """Keras 2's `slice_arrays`: rows `start:stop` (or the rows at `start`) of each array."""
    if arrays is None:
        return [None]
    if isinstance(arrays, list):
        if hasattr(start, "__len__"):
            return [None if x is None else x[start] for x in arrays]
        return [None if x is None else x[start:stop] for x in arrays]
    if hasattr(start, "__len__"):
        return arrays[start]
    return arrays[start:stop]


def transpose_shape(shape: Any, target_format: str, spatial_axes: Any) -> Any:
    """A channels-last shape in `target_format`'s order (Keras 2)."""
    if target_format == "channels_first":
        new_values = shape[: spatial_axes[0]]
        new_values += (shape[-1],)
        new_values += tuple(shape[x] for x in spatial_axes)
        if isinstance(shape, list):
            return list(new_values)
        return new_values
    if target_format == "channels_last":
        return shape
    raise ValueError(
        "The `data_format` argument must be one of 'channels_first', 'channels_last'. "
        f"Received: {target_format!r}"
    )


def func_dump(func: Callable) -> tuple:
    """Keras 2's serialisation of a Python function: (code, defaults, closure)."""
    code = codecs.encode(marshal.dumps(func.__code__), "base64").decode("ascii")
    closure = tuple(cell.cell_contents for cell in func.__closure__) if func.__closure__ else None
    return code, func.__defaults__, closure


def func_load(code: Any, defaults: Any = None, closure: Any = None, globs: Any = None) -> Callable:
    """The function `func_dump` serialised (Keras 2); runs code from the file: trust it."""
    if isinstance(code, (tuple, list)):
        code, defaults, closure = code
        if isinstance(defaults, list):
            defaults = tuple(defaults)
    cells = tuple(types.CellType(value) for value in closure) if closure else None
    loaded = marshal.loads(codecs.decode(code.encode("ascii"), "base64"))  # noqa: S302
    return types.FunctionType(
        loaded, globs if globs is not None else globals(), loaded.co_name, defaults, cells
    )
