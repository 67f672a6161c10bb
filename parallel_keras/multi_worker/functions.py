# SPDX-License-Identifier: Apache-2.0
"""Sending a function and its arguments to a fresh worker process.

`pickle` sends a function by name, which a fresh process cannot resolve
when the function was defined in a notebook (`__main__` of the kernel) or
inside another function. Such a function is sent as its code object
(`marshal`; the workers run this same interpreter), the globals its code
names, its defaults and its closure; everything else goes through `pickle`.
Anything that cannot be sent is reported before a worker starts.
"""

from __future__ import annotations

import builtins
import marshal
import pickle
import types
from collections.abc import Callable
from typing import Any


def _sent_by_code(function: types.FunctionType) -> bool:
    return function.__module__ in ("__main__", None) or "<" in function.__qualname__


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return names


def _unsendable(where: str, value: Any, reason: str) -> TypeError:
    return TypeError(
        "notebook_launcher runs the function in fresh worker processes, so "
        "the function, its arguments and the notebook globals it uses must "
        f"be picklable. Received: {where} = {type(value).__name__} "
        f"{_short_repr(value)}, which cannot be sent ({reason}). Create it "
        "inside the function (models, datasets, locks, open files), or "
        "define it in an importable module instead of the notebook."
    )


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def dump_value(value: Any, where: str, _active: tuple = ()) -> tuple:
    """A picklable description of `value`; raises TypeError if impossible."""
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, types.FunctionType) and _sent_by_code(value):
        if value in _active:
            return ("self",)
        return ("function", dump_function(value, where, _active))
    value_type = value if isinstance(value, type) else type(value)
    if getattr(value_type, "__module__", None) == "__main__":
        return _raise(_unsendable(where, value, "its class is defined in the notebook"))
    try:
        return ("pickle", pickle.dumps(value))
    # An object's own __reduce__ may raise anything: all mean unsendable.
    except Exception as error:  # noqa: BLE001
        raise _unsendable(where, value, f"{type(error).__name__}: {error}") from None


def _raise(error):
    raise error


def dump_function(function: Callable, where: str = "function", _active: tuple = ()) -> tuple:
    """A picklable description of `function` (see the module docstring)."""
    if not callable(function):
        raise TypeError(
            "notebook_launcher needs a function to run in each worker. "
            f"Received: function={_short_repr(function)}. Pass e.g. "
            "notebook_launcher(train, args=(...))."
        )
    if not isinstance(function, types.FunctionType) or not _sent_by_code(function):
        return ("pickle", dump_value(function, where, _active)[1])
    if where == "function":
        where = f"function {function.__qualname__}"
    active = (*_active, function)
    code = function.__code__
    namespace = function.__globals__
    globals_ = {
        name: dump_value(namespace[name], f"global {name!r} of {where}", active)
        for name in sorted(_global_names(code))
        if name in namespace
    }
    closure = [
        dump_value(cell.cell_contents, f"variable {name!r} captured by {where}", active)
        for name, cell in zip(code.co_freevars, function.__closure__ or ())
    ]
    defaults = dump_value(function.__defaults__, f"defaults of {where}", active)
    kwdefaults = dump_value(function.__kwdefaults__, f"defaults of {where}", active)
    return (
        "code",
        marshal.dumps(code),
        globals_,
        closure,
        defaults,
        kwdefaults,
        function.__name__,
        function.__qualname__,
    )


def load_value(data: tuple, current: Callable | None = None) -> Any:
    """The value `dump_value` described."""
    kind = data[0]
    if kind == "module":
        import importlib

        return importlib.import_module(data[1])
    if kind == "self":
        return current
    if kind == "function":
        return load_function(data[1])
    return pickle.loads(data[1])


def load_function(data: tuple) -> Callable:
    """The function `dump_function` described."""
    if data[0] == "pickle":
        return pickle.loads(data[1])
    _, code, globals_, closure, defaults, kwdefaults, name, qualname = data
    namespace = {"__builtins__": builtins, "__name__": "__main__"}
    function = types.FunctionType(
        marshal.loads(code),
        namespace,
        name,
        None,
        tuple(types.CellType() for _ in closure) or None,
    )
    function.__qualname__ = qualname
    for cell, value in zip(function.__closure__ or (), closure):
        cell.cell_contents = load_value(value, function)
    function.__defaults__ = load_value(defaults, function)
    function.__kwdefaults__ = load_value(kwdefaults, function)
    for key, value in globals_.items():
        namespace[key] = load_value(value, function)
    return function
