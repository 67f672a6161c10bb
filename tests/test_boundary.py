# SPDX-License-Identifier: Apache-2.0
"""One boundary: private Keras/TensorFlow is touched only in `_internals/`.

Two checks, both over the package, the benchmarks and the tests (except
`parallel_keras/_internals/` and `tests/internals/`, and the legacy user
scripts the migrate tests rewrite):

* imports: ruff's banned-import rule (TID251, configured in
  pyproject.toml) refuses `keras.src` and `tensorflow.python`;
* attributes: the AST scan below refuses a private attribute of Keras or
  TensorFlow. The rule: `x._name`, `getattr(x, "_name")` (and set/has/del),
  or a method `def _name` in a class, where `_name` has one leading
  underscore and is a private name of the Keras/TensorFlow classes
  parallel_keras works with (as installed: their `dir()` and the instance
  attributes of a built model, layer, variable, optimizer, callback,
  strategy). `tf.__internal__` counts too. parallel_keras's own names that
  happen to equal such a name are allowed per file, in `_OWN_NAMES`.
"""

import ast
import pathlib
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]
_SCANNED = ("parallel_keras", "benchmarks", "tests")
_EXEMPT = (
    "parallel_keras/_internals/",
    "tests/internals/",
    "tests/migrate_corpus/",
    "tests/migrate_corpus_real/",
)
# (file, name): parallel_keras's own attribute, not the Keras one of that name.
_OWN_NAMES = {
    ("parallel_keras/migrate/rules/generators.py", "_options"),  # A LibCST transformer's.
    ("parallel_keras/migrate/rules/legacy_api.py", "_model"),  # A LibCST transformer's.
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.fixture(scope="module")
def upstream_private_names() -> set[str]:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    inputs = keras.Input((2,))
    layer = keras.layers.Dense(1)
    model = keras.Model(inputs, layer(inputs))
    model.compile("sgd", "mse")
    variable = model.variables[0]
    objects = (
        keras.Model,
        keras.layers.Layer,
        keras.Variable,
        keras.optimizers.Optimizer,
        keras.callbacks.Callback,
        keras.callbacks.ModelCheckpoint,
        keras.metrics.Metric,
        keras.KerasTensor,
        tf.distribute.Strategy,
        tf.distribute.MirroredStrategy,
        tf.distribute.StrategyExtended,
        tf.Variable,
        tf.data.Dataset,
        model,
        layer,
        model.optimizer,
        variable,
        variable.value,
        inputs,
        strategy,
        strategy.extended,
        keras.callbacks.ModelCheckpoint("unused.keras"),
    )
    names = set()
    for value in objects:
        names.update(name for name in dir(value) if _private(name))
        names.update(name for name in getattr(value, "__dict__", {}) if _private(name))
    assert {"_distribute_strategy", "_value", "_save_model"} <= names  # The scan sees them.
    return names


def _scanned_files() -> list[tuple[str, pathlib.Path]]:
    files = []
    for folder in _SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if not relative.startswith(_EXEMPT):
                files.append((relative, path))
    return files


def private_touches(source: str, relative: str, upstream: set[str]) -> list[str]:
    """`"file:line: code"` for each upstream private touch in `source`."""

    def upstream_name(name: object) -> bool:
        return isinstance(name, str) and name in upstream and (relative, name) not in _OWN_NAMES

    touches = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (
            upstream_name(node.attr) or node.attr == "__internal__"
        ):
            touches.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and upstream_name(node.args[1].value)
        ):
            touches.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef) and upstream_name(statement.name):
                    touches.append((statement.lineno, f"def {statement.name}"))
    return [f"{relative}:{line}: {code}" for line, code in sorted(touches)]


def test_no_private_keras_or_tensorflow_attribute_outside_internals(upstream_private_names):
    touches = [
        touch
        for relative, path in _scanned_files()
        for touch in private_touches(path.read_text(), relative, upstream_private_names)
    ]
    assert touches == [], (
        "Private Keras/TensorFlow attributes outside parallel_keras/_internals/ "
        "(move each into an _internals module, with a canary in tests/internals/):\n"
        + "\n".join(touches)
    )


def test_the_scan_finds_each_form_of_touch(upstream_private_names):
    source = (
        "model._distribute_strategy = s\n"
        "getattr(variable, '_value')\n"
        "tf.__internal__.tracking\n"
        "class Hook(keras.callbacks.ModelCheckpoint):\n"
        "    def _save_model(self, epoch, batch, logs): pass\n"
        "self._template = template\n"  # parallel_keras's own: not a touch.
    )
    touches = private_touches(source, "parallel_keras/example.py", upstream_private_names)
    assert [touch.split(": ", 1)[1] for touch in touches] == [
        "model._distribute_strategy",
        "getattr(variable, '_value')",
        "tf.__internal__",
        "def _save_model",
    ], touches


def test_own_names_are_still_defined_where_listed():
    for relative, name in _OWN_NAMES:
        assert f"self.{name}" in (REPO / relative).read_text(), (relative, name)


def _ruff(*args: str, source: str | None = None) -> subprocess.CompletedProcess:
    pytest.importorskip("ruff", reason="ruff is in the `test` extra")
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *args],
        cwd=REPO,
        input=source,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_banned_import_rule_passes_on_the_repository():
    # Only the boundary rule: the rest of the lint (CI's `ruff check .`)
    # depends on ruff's version, which the matrix environments do not pin.
    process = _ruff("--select", "TID251", ".")
    assert process.returncode == 0, process.stdout + process.stderr


@pytest.mark.parametrize(
    "filename, refused",
    [
        ("parallel_keras/data_parallel/example.py", True),
        ("benchmarks/example.py", True),
        ("tests/test_example.py", True),
        ("parallel_keras/_internals/example.py", False),
        ("tests/internals/test_example.py", False),
    ],
)
def test_the_banned_import_rule_refuses_private_imports_outside_internals(filename, refused):
    source = "from keras.src.ops import node\nimport tensorflow.python.eager.context\n"
    process = _ruff("--select", "TID251", "--stdin-filename", filename, "-", source=source)
    assert process.stdout.count("TID251") == (2 if refused else 0), process.stdout
    assert process.returncode == (1 if refused else 0), process.stdout + process.stderr
