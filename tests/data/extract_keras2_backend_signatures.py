# SPDX-License-Identifier: Apache-2.0
"""Writes `keras2_backend_signatures.json` from Keras 2's own backend source.

Keras 2 cannot be installed next to Keras 3, so the signatures the migrate
audit test (`tests/migrate/test_backend_ops.py`) compares against are
extracted once, by parsing (never importing) the released source:

    pip download keras==2.3.1 --no-deps -d /tmp/keras231
    cd /tmp/keras231 && unzip -q Keras-2.3.1-py2.py3-none-any.whl
    python tests/data/extract_keras2_backend_signatures.py /tmp/keras231/keras

Each public function of `keras/backend/tensorflow_backend.py` and
`keras/backend/common.py` becomes `{"params": [[name, default-source or
null], ...]}`; a default is kept as its source text (`-1`, `None`, `0.`).
Where the body starts with `if dtype is None: dtype = floatx()`, what the
None default means is kept too, under "none_means".
"""

from __future__ import annotations

import ast
import json
import pathlib
import sys

_SOURCES = ("backend/tensorflow_backend.py", "backend/common.py")


def _none_defaults(node: ast.FunctionDef) -> dict[str, str]:
    """`if dtype is None: dtype = floatx()` at the top level of the body."""
    found = {}
    for statement in node.body:
        if not (
            isinstance(statement, ast.If)
            and isinstance(statement.test, ast.Compare)
            and isinstance(statement.test.left, ast.Name)
            and isinstance(statement.test.ops[0], ast.Is)
            and isinstance(statement.test.comparators[0], ast.Constant)
            and statement.test.comparators[0].value is None
            and len(statement.body) == 1
            and not statement.orelse
        ):
            continue
        assign = statement.body[0]
        name = statement.test.left.id
        if (
            isinstance(assign, ast.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)
            and assign.targets[0].id == name
        ):
            found[name] = ast.unparse(assign.value)
    return found


def signatures(package: pathlib.Path) -> dict[str, dict]:
    """Public top-level functions of Keras 2's backend, with their defaults."""
    found: dict[str, dict] = {}
    for relative in _SOURCES:
        tree = ast.parse((package / relative).read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            args = node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + [
                ast.unparse(default) for default in node.args.defaults
            ]
            found[node.name] = {
                "params": [[arg.arg, default] for arg, default in zip(args, defaults)],
                "source": relative,
            }
            effective = _none_defaults(node)
            if effective:
                found[node.name]["none_means"] = effective
    return found


def main(argv: list[str]) -> None:
    package = pathlib.Path(argv[1])
    out = pathlib.Path(__file__).with_name("keras2_backend_signatures.json")
    data = {"keras_version": "2.3.1", "functions": signatures(package)}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv)
