# SPDX-License-Identifier: Apache-2.0
"""Recognizes Keras 2's `ModelMGPU` wrapper classes when they are defined.

The wrapper (see `adoption.py`) is a `keras.Model` subclass whose
`__init__` calls `multi_gpu_model` before Keras has initialized the
instance, and then copies the parallel model's `__dict__`. `multi_gpu_model`
must know which instance is such a wrapper while it is being constructed,
so that it can adopt it (`adoption.adopt_constructing_wrapper`).

This module finds out without reading any caller's frame. At `import keras`
(with parallel_keras imported, through `parallel_keras._placement_hooks`)
it adds one classmethod to Keras, `keras.Model.__init_subclass__`, listed
by `parallel_keras.testing.installed_interceptions()`. For every subclass
defined afterwards it reads the class's own `__init__` (its code's names,
nested code included, and the globals and closure cells those names are
bound to now) and, only when that `__init__` names `multi_gpu_model`,
wraps it so that while it runs `constructing_wrapper()` returns the
instance. Every other class, user's or Keras's, is left as it was defined.
Classes defined before the hook was installed (a script that imported Keras
and defined its wrapper before importing parallel_keras) are read the same
way when it is installed.

A wrapper whose `__init__` reaches `multi_gpu_model` only through a helper
of another name is not recognized (the frame-reading version did not
recognize it either): call `multi_gpu_model` in the wrapper's `__init__`,
or use the parallel model directly.
"""

from __future__ import annotations

import contextvars
import functools
import types
import weakref
from collections.abc import Iterator
from typing import Any

import keras

from parallel_keras._internals import interceptions

# What the hook replaces, as `interceptions.installed()` names it.
INIT_SUBCLASS = f"{keras.Model.__module__}.{keras.Model.__qualname__}.__init_subclass__"
_NAME = "multi_gpu_model"

_constructing: contextvars.ContextVar[keras.Model | None] = contextvars.ContextVar(
    "parallel_keras_constructing_wrapper", default=None
)
# Classes whose `__init__` this module wrapped (never wrapped twice).
_wrapped: weakref.WeakSet[type] = weakref.WeakSet()


def constructing_wrapper() -> keras.Model | None:
    """The instance whose wrapper `__init__` runs now (innermost), or None."""
    return _constructing.get()


def _is_multi_gpu_model(value: object) -> bool:
    if isinstance(value, functools.partial):
        value = value.func
    return isinstance(value, types.FunctionType) and value.__name__ == _NAME


def names_multi_gpu_model(init: object) -> bool:
    """Whether the function `init` calls or reads `multi_gpu_model`.

    By name (`multi_gpu_model(...)`, `parallel_keras.multi_gpu_model(...)`,
    an import inside the function), or through a global or closure name
    bound to it now (`from parallel_keras import multi_gpu_model as mgpu`,
    `functools.partial(multi_gpu_model, gpus=4)`), in `init` or in the
    function it decorates (`__wrapped__`).
    """
    if not isinstance(init, types.FunctionType):
        return False
    # A decorated `__init__` (`functools.wraps`): the user's function inside.
    inner = getattr(init, "__wrapped__", None)
    if inner is not None and inner is not init and names_multi_gpu_model(inner):
        return True
    cells = dict(zip(init.__code__.co_freevars, init.__closure__ or ()))
    for name in init.__code__.co_freevars:
        try:
            if _is_multi_gpu_model(cells[name].cell_contents):
                return True
        except ValueError:  # An empty cell: bound later.
            continue
    bound = init.__globals__
    codes = [init.__code__]
    while codes:
        code = codes.pop()
        if any(name == _NAME or _is_multi_gpu_model(bound.get(name)) for name in code.co_names):
            return True
        codes.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return False


def _recognize(cls: type) -> None:
    """Wraps `cls.__init__` if it is a wrapper's (names `multi_gpu_model`)."""
    init = vars(cls).get("__init__")
    if cls in _wrapped or not isinstance(init, types.FunctionType):
        return
    if not names_multi_gpu_model(init):
        return

    @functools.wraps(init)
    def init_as_wrapper(self, *args: Any, **kwargs: Any) -> None:
        token = _constructing.set(self)
        try:
            init(self, *args, **kwargs)
        finally:
            _constructing.reset(token)

    # The user's own class, not Keras's: not an interception (nothing of
    # Keras changes), and the wrapper only marks the instance for its
    # duration; `init_as_wrapper.__wrapped__` is the user's function.
    setattr(cls, "__init__", init_as_wrapper)  # noqa: B010
    _wrapped.add(cls)


def _subclasses(cls: type) -> Iterator[type]:
    subclass: type
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def install() -> None:
    """Adds `keras.Model.__init_subclass__`, which recognizes wrapper classes.

    Installed when this module is imported, with Keras (see
    `parallel_keras._placement_hooks`); a no-op if installed already. The
    subclasses of `keras.Model` defined so far are read at once.
    """
    if interceptions.is_installed(INIT_SUBCLASS):
        return
    # Keras 3.5 to 3.15 on TensorFlow define no `__init_subclass__` in
    # `keras.Model`'s MRO (only `object`'s); one Keras defines is chained.
    shipped = vars(keras.Model).get("__init_subclass__")

    def init_subclass(cls: type, **kwargs: Any) -> None:
        if shipped is not None:
            shipped.__get__(None, cls)(**kwargs)
        else:
            super(keras.Model, cls).__init_subclass__(**kwargs)
        _recognize(cls)

    interceptions.patch(
        keras.Model,
        "__init_subclass__",
        classmethod(init_subclass),
        by=__name__,
        when=interceptions.AT_KERAS_IMPORT,
        why="Recognizes a keras.Model subclass whose own __init__ calls "
        "multi_gpu_model (Keras 2's ModelMGPU wrapper) as it is defined, and "
        "wraps only that __init__, so that multi_gpu_model can adopt the "
        "instance under construction; every other class is left as defined.",
    )
    for subclass in list(_subclasses(keras.Model)):
        _recognize(subclass)


# Imported for this (by `parallel_keras._placement_hooks`) once Keras is:
# installed by the module itself, so that an import of this module that
# is itself what imports Keras still ends with the hook in place.
install()
