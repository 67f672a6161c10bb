# SPDX-License-Identifier: Apache-2.0
"""imgaug 0.4.0 as Keras 2-era scripts ran it, under NumPy 2.

imgaug 0.4.0 (2020) is the last release of an unmaintained package. It
reads three NumPy names that NumPy 2 removed (TensorFlow 2.18+ installs
NumPy 2): `np.sctypes` when `imgaug.imgaug` is imported (so `import imgaug`
fails), `np.complex` in `imgaug.parameters` (`Power` of negative bases,
`FrequencyNoise`) and, in NumPy 1.24-1.26 only, `np.bool` (NumPy 2 has it
again, as `np.bool_`). Every other NumPy name it reads has the same value in
NumPy 1 and 2 (checked by scanning its sources; the augmenters a test runs
with a fixed seed give the same arrays as imgaug on NumPy 1.26.4).

Importing this module makes `import imgaug` work: each `imgaug` module (and
only those) sees `numpy` as NumPy with NumPy 1's values for those names:
`sctypes` (the same dict of NumPy's own type objects NumPy 1 built),
`complex` (the builtin, as in NumPy < 1.24) and `bool` (the builtin). NumPy
itself is not changed. The process-wide state touched is one finder at the
front of `sys.meta_path` that answers only for `imgaug` and its submodules
(each is loaded from its own file as usual, with NumPy 1's names in its
namespace), and one for `parallel_keras.compat.<package>.<submodule>` (the
same module object as `imgaug.<submodule>`). Under NumPy 1, or when imgaug is
already imported, imgaug's modules are loaded as they are (the finder only
gives the aliases). Every name here is imgaug's own:
`from parallel_keras.compat.imgaug import augmenters as iaa` gives
`imgaug.augmenters`.

Modernise: albumentations (`iaa.Fliplr(0.5)` -> `A.HorizontalFlip(p=0.5)`,
`iaa.Affine` -> `A.Affine`, `iaa.Sequential` -> `A.Compose`) or Keras 3
preprocessing layers (`keras.layers.RandomFlip`, `RandomRotation`,
`RandomZoom`).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import sys
import types
from typing import Any

import numpy as np

from parallel_keras.compat import _aliases

_PACKAGE = "imgaug"
_ALIAS = __name__  # parallel_keras.compat.imgaug
# A package path, so that `import parallel_keras.compat.imgaug.augmenters`
# asks the finder below.
__path__: list[str] = []


def _numpy1_sctypes() -> dict[str, list[type]]:
    """`np.sctypes` as NumPy 1.x built it (`numpy/core/numerictypes.py`).

    NumPy 1 listed, per kind, the sized type of each bit width that exists on
    the platform (`_set_array_types`: ints of 8-64 bits, floats of 16-128,
    complexes of 64-256), then `others`.
    """
    sizes = {
        "int": (8, 16, 32, 64),
        "uint": (8, 16, 32, 64),
        "float": (16, 32, 64, 80, 96, 128, 256, 512),
        "complex": (32, 64, 128, 160, 192, 256, 512, 1024),
    }
    sctypes: dict[str, list[type]] = {}
    for kind, bits in sizes.items():
        found: list[type] = []
        for width in bits:
            scalar = getattr(np, f"{kind}{width}", None)
            if scalar is not None and scalar not in found:
                found.append(scalar)
        sctypes[kind] = found
    sctypes["others"] = [bool, object, bytes, str, np.void]
    return sctypes


class _NumPy1(types.ModuleType):
    """NumPy as an `imgaug` module sees it: NumPy's names, plus NumPy 1's removed ones."""

    def __init__(self):
        super().__init__("numpy", np.__doc__)
        self.__dict__.update(
            sctypes=_numpy1_sctypes(),
            complex=builtins.complex,
            bool=builtins.bool,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(np)) | set(self.__dict__))


_NUMPY1 = _NumPy1()


def _imgaug_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`__import__` inside imgaug's modules: `import numpy [as np]` gives NumPy 1's view."""
    module = builtins.__import__(name, globals, locals, fromlist, level)
    if level == 0 and not fromlist and (name == "numpy" or name.startswith("numpy.")):
        return _NUMPY1
    return module


_IMGAUG_BUILTINS = dict(builtins.__dict__, __import__=_imgaug_import)


class _Numpy1Loader(importlib.abc.Loader):
    """Loads an imgaug module from its own file with NumPy 1's names in its namespace."""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__dict__["__builtins__"] = _IMGAUG_BUILTINS
        self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, numpy1_names: bool):
        self._numpy1_names = numpy1_names

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PACKAGE and not fullname.startswith(_PACKAGE + "."):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if (
                    self._numpy1_names
                    and spec.loader is not None
                    and spec.origin not in (None, "built-in", "frozen")
                ):
                    spec.loader = _Numpy1Loader(spec.loader)
                return spec
        return None


def _install() -> None:
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return
    needed = not hasattr(np, "sctypes") and _PACKAGE not in sys.modules
    if needed:
        # A failed `import imgaug` before this left no module behind, but
        # may have left its submodules: load them again, with NumPy 1's names.
        for name in [n for n in sys.modules if n.startswith(_PACKAGE + ".")]:
            del sys.modules[name]
    sys.meta_path.insert(0, _Finder(numpy1_names=needed))
    _aliases.install(_ALIAS, _PACKAGE)


_install()


def __getattr__(name: str) -> Any:
    return _aliases.package_attribute(_PACKAGE, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(importlib.import_module(_PACKAGE))))
