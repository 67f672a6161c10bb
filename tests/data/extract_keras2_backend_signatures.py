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
"""

from __future__ import annotations

import ast
import json
import pathlib
import sys

_SOURCES = ("backend/tensorflow_backend.py", "backend/common.py")


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
    return found


def main(argv: list[str]) -> None:
    package = pathlib.Path(argv[1])
    out = pathlib.Path(__file__).with_name("keras2_backend_signatures.json")
    data = {"keras_version": "2.3.1", "functions": signatures(package)}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv)
