# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.compat.<name>.<submodule>` as the module `<package>.<submodule>` itself.

A compatibility module for a whole package (`compat.imgaug`,
`compat.keras_resnet`) makes the package run, then answers for it: its
attributes are the package's (module `__getattr__`), and its submodules,
through the finder here, are the package's own module objects (never a
second copy), so `from parallel_keras.compat.imgaug.augmenters import
Fliplr` gives `imgaug.augmenters.Fliplr`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import Any

_PACKAGES: dict[str, str] = {}  # alias module name -> the package it stands for


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self._target = target

    def create_module(self, spec):
        return importlib.import_module(self._target)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        for alias, package in _PACKAGES.items():
            if fullname.startswith(alias + "."):
                name = package + fullname[len(alias) :]
                if importlib.util.find_spec(name) is None:
                    return None
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name))
        return None


def install(alias: str, package: str) -> None:
    """Makes `alias.<sub>` import as `package.<sub>` (once per process)."""
    _PACKAGES[alias] = package
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())


def package_attribute(package: str, module_name: str, name: str) -> Any:
    """`package.name`, importing `package.name` if it is a submodule not yet loaded."""
    if name.startswith("__"):  # Module protocol (doctest's `__test__`, ...): not the package's.
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    loaded = importlib.import_module(package)
    try:
        return getattr(loaded, name)
    except AttributeError:
        if importlib.util.find_spec(f"{package}.{name}") is None:
            raise
        return importlib.import_module(f"{package}.{name}")
