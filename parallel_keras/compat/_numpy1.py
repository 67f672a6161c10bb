# SPDX-License-Identifier: Apache-2.0
"""NumPy as a NumPy 1-era package beside Keras reads it: NumPy's names, plus NumPy 1's removed ones.

imgaug 0.4.0 and scikit-optimize 0.10.2 (each its package's last release)
read names NumPy 1.24 and 2.x removed: `np.sctypes`, `np.complex`,
`np.bool` (the builtin in NumPy < 1.24; NumPy 2's `np.bool` is `np.bool_`),
`np.in1d`, ... `install(package)` loads each module of `package` (from its
own file, as usual) with `numpy` bound, in that module only, to a view of
NumPy that adds those names with NumPy 1's values (each the object or the
function body NumPy 1 had, see `_NUMPY1_NAMES`). NumPy itself is not changed;
the process-wide state is one finder at the front of `sys.meta_path`, which
answers only for the installed packages' module names. Where NumPy still has
every name (NumPy < 1.24), nothing is installed.
"""

from __future__ import annotations

import builtins
import importlib.abc
import sys
import types
from typing import Any

import numpy as np


def sctypes() -> dict[str, list[type]]:
    """`np.sctypes` as NumPy 1.x built it (`numpy/core/numerictypes.py`).

    Per kind, the sized type of each bit width the platform has
    (`_set_array_types`: ints of 8-64 bits, floats of 16-128, complexes of
    64-256), then `others`.
    """
    sizes = {
        "int": (8, 16, 32, 64),
        "uint": (8, 16, 32, 64),
        "float": (16, 32, 64, 80, 96, 128, 256, 512),
        "complex": (32, 64, 128, 160, 192, 256, 512, 1024),
    }
    found: dict[str, list[type]] = {}
    for kind, bits in sizes.items():
        types_of_kind: list[type] = []
        for width in bits:
            scalar = getattr(np, f"{kind}{width}", None)
            if scalar is not None and scalar not in types_of_kind:
                types_of_kind.append(scalar)
        found[kind] = types_of_kind
    found["others"] = [bool, object, bytes, str, np.void]
    return found


def _in1d(ar1, ar2, assume_unique=False, invert=False, **kwargs):
    # NumPy 1.26's isin is in1d(...).reshape(shape): in1d is its flat result.
    return np.isin(ar1, ar2, assume_unique=assume_unique, invert=invert, **kwargs).ravel()


def _msort(a):
    b = np.array(a, subok=True, copy=True)
    b.sort(0)
    return b


def _asscalar(a):
    return a.item()


# NumPy 1 name -> its value there (the builtins' aliases were the builtins).
_NUMPY1_NAMES: dict[str, Any] = {
    "bool": builtins.bool,
    "int": builtins.int,
    "float": builtins.float,
    "complex": builtins.complex,
    "object": builtins.object,
    "str": builtins.str,
    "unicode": builtins.str,
    "long": builtins.int,
    "Inf": np.inf,
    "Infinity": np.inf,
    "infty": np.inf,
    "PINF": np.inf,
    "NINF": -np.inf,
    "NaN": np.nan,
    "NAN": np.nan,
    "PZERO": 0.0,
    "NZERO": -0.0,
    "float_": np.float64,
    "complex_": np.complex128,
    "cfloat": np.complex128,
    "singlecomplex": np.complex64,
    "longfloat": np.longdouble,
    "clongfloat": np.clongdouble,
    "longcomplex": np.clongdouble,
    "string_": np.bytes_,
    "unicode_": np.str_,
    "bool8": np.bool_,
    "object0": np.object_,
    "str0": np.str_,
    "bytes0": np.bytes_,
    "int0": np.intp,
    "uint0": np.uintp,
    "product": np.prod,
    "cumproduct": np.cumprod,
    "alltrue": np.all,
    "sometrue": np.any,
    "round_": np.round,
    "issubclass_": builtins.issubclass,
    "in1d": _in1d,
    "msort": _msort,
    "asscalar": _asscalar,
}


def _missing() -> dict[str, Any]:
    # `vars`, not `hasattr`: NumPy 2 warns (FutureWarning) on reading np.object / np.str.
    present = vars(np)
    names = {name: value for name, value in _NUMPY1_NAMES.items() if name not in present}
    if names:
        # NumPy 2 has `np.bool` again, as `np.bool_`: NumPy 1 code meant the builtin.
        names["bool"] = builtins.bool
    if "sctypes" not in present:
        names["sctypes"] = sctypes()
    return names


class _NumPy1(types.ModuleType):
    """NumPy's names, plus NumPy 1's removed ones (in this object only)."""

    def __init__(self, names: dict[str, Any]):
        super().__init__("numpy", np.__doc__)
        self.__dict__.update(names)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(np)) | set(self.__dict__))


_NAMES = _missing()
_VIEW = _NumPy1(_NAMES)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    """`__import__` in an installed package's modules: `import numpy [as np]` gives the view."""
    module = builtins.__import__(name, globals, locals, fromlist, level)
    if level == 0 and not fromlist and (name == "numpy" or name.startswith("numpy.")):
        return _VIEW
    return module


_BUILTINS = dict(builtins.__dict__, __import__=_import)
_PACKAGES: set[str] = set()


class _Loader(importlib.abc.Loader):
    """Loads a module from its own file with the NumPy 1 view as its `numpy`."""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__dict__["__builtins__"] = _BUILTINS
        self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in _PACKAGES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and spec.origin not in (None, "built-in", "frozen"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def install(package: str) -> bool:
    """Loads `package`'s modules with the NumPy 1 view from now on.

    Returns whether it was needed and possible: not when NumPy has every
    name, nor when `package` is already imported (its modules are kept).
    """
    if not _NAMES or package in sys.modules:
        return False
    # A failed `import package` before this left no module behind, but may
    # have left its submodules: load them again, with the view.
    for name in [n for n in sys.modules if n.startswith(package + ".")]:
        del sys.modules[name]
    _PACKAGES.add(package)
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    return True
