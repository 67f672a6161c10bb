# SPDX-License-Identifier: Apache-2.0
"""How every public package of parallel_keras exports its names: one stub each.

A package's `__init__.pyi` lists its exports as imports
(`from .scope import device as device`, `from ..cluster.writes import
is_chief as is_chief`, `from . import testing as testing`); type checkers
and IDEs read it, and `attach_stub` turns it into the package's
`__getattr__`, `__dir__` and `__all__`, each name imported on first use
(Scientific Python SPEC 1). So `import parallel_keras` and the launcher
process import neither TensorFlow nor Keras until a name that needs them is
used, and the list of exports is written once.

`lazy_loader.attach_stub`, which this follows, takes only `from .x` lines;
packages here also export names defined in a sibling package
(`parallel_keras.multi_worker` exports `parallel_keras.cluster`'s
`worker_info`), hence this small version.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
from collections.abc import Callable
from typing import Any


def attach_stub(
    package_name: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The lazy `__getattr__`, `__dir__` and `__all__` of a package's stub.

    Args:
        package_name: The package's `__name__`.
        init_file: The package's `__file__`; its stub is the `.pyi` beside it.

    Returns:
        `(__getattr__, __dir__, __all__)` for the package's namespace.

    Raises:
        ValueError: If the stub holds anything but `from ... import x as x`
            lines (an export must keep its name).
    """
    stub = os.path.splitext(init_file)[0] + ".pyi"
    with open(stub, encoding="utf-8") as file:
        tree = ast.parse(file.read(), filename=stub)
    # exported name -> (absolute module, attribute or None for a module).
    where: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            if isinstance(node, (ast.AnnAssign, ast.Expr)):
                continue  # `__version__: str`, comments as strings
            raise ValueError(
                f"{stub} must hold only relative `from ... import x as x` lines. "
                f"Received: line {node.lineno}."
            )
        module = importlib.util.resolve_name("." * node.level + (node.module or ""), package_name)
        for alias in node.names:
            if alias.asname not in (None, alias.name):
                raise ValueError(
                    f"{stub} line {node.lineno} renames {alias.name} to {alias.asname}; an "
                    f"export keeps its name. Write `import {alias.name} as {alias.name}`."
                )
            if node.module is None:  # `from . import testing as testing`
                where[alias.name] = (f"{module}.{alias.name}", None)
            else:
                where[alias.name] = (module, alias.name)
    exports = sorted(where)
    namespace = importlib.import_module(package_name).__dict__

    def __getattr__(name: str) -> Any:  # noqa: N807
        if name not in where:
            raise AttributeError(f"module {package_name!r} has no attribute {name!r}")
        module_name, attribute = where[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        namespace[name] = value  # Later lookups skip __getattr__.
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__, exports
