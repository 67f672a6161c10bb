# SPDX-License-Identifier: Apache-2.0
"""Never a rewrite that cannot run: every name migrate writes resolves.

Two sources of names, both resolved with importlib + getattr on the
installed TensorFlow/Keras pair (the nox matrix's core session runs this
file on every pair of the declared range):

- the rule tables: every dotted name in the `becomes` and `modern` columns
  of each rule's AUDIT table (docs/migrate-names.md);
- what the rules actually write: every dotted name in the migrated text of
  the test scripts, snippets and corpora that their source did not hold.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pathlib
import re

import pytest

from parallel_keras import migrate
from parallel_keras._internals import PlacementNeedsNewerKeras
from parallel_keras.migrate import audit

HERE = pathlib.Path(__file__).parent
TESTS = HERE.parent

# The roots a rule writes names under, and the module each stands for.
_ROOTS = {
    "tf": "tensorflow",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "parallel_keras": "parallel_keras",
    "np": "numpy",
    "numpy": "numpy",
}
# Libraries beside Keras: resolved when installed (they are the user's).
_LIBRARY_ROOTS = {
    "pd": "pandas",
    "pandas": "pandas",
    "sklearn": "sklearn",
    "joblib": "joblib",
    "imageio": "imageio",
    "PIL": "PIL",
    "scipy": "scipy",
    "tf_keras": "tf_keras",
}
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")

# Names a rewrite leaves on a line it flags that do not resolve yet (none).
_PENDING: dict[str, str] = {}
# Table names that exist from a NumPy release on; under an older NumPy the
# rule keeps the old name (rules/numpy2.py, `_exists_here`).
_NUMPY_FROM: dict[str, tuple[int, int]] = {"numpy.trapezoid": (2, 0)}


def _numpy_has(name: str) -> bool:
    import numpy

    needed = _NUMPY_FROM.get(name)
    installed = tuple(int(part) for part in numpy.__version__.split(".")[:2])
    return needed is None or installed >= needed


class OptionalPackageMissing(Exception):
    """The name lives in a module that needs a package of an extra, not installed here."""


def _optional_missing(error: ModuleNotFoundError) -> bool:
    """Whether `error` names a package outside TensorFlow/Keras/NumPy that is not installed.

    `parallel_keras.compat.albumentations` imports albumentations (the
    `albumentations` extra): the nox core sessions install no extra, and the
    full suite, which installs the `test` extra, resolves its names.
    """
    root = (error.name or "").partition(".")[0]
    if root in ("", "parallel_keras", "keras", "tensorflow", "numpy"):
        return False
    return importlib.util.find_spec(root) is None


def resolve(dotted: str) -> bool:
    """Whether `dotted` (its root spelled as a module) names something.

    The longest importable prefix is imported, the rest read with getattr,
    as Python does when the rewritten line runs.

    Raises:
        OptionalPackageMissing: If the module needs a package of an extra
            that is not installed.
    """
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if _optional_missing(error):
                raise OptionalPackageMissing(error.name) from error
            continue
        except ImportError:
            continue
        for attribute in parts[cut:]:
            try:
                value = getattr(value, attribute)
            except ModuleNotFoundError as error:
                if _optional_missing(error):
                    raise OptionalPackageMissing(error.name) from error
                return False
            except AttributeError:
                return False
            except PlacementNeedsNewerKeras:
                # The name exists (parallel_keras.device); on Keras < 3.11 its
                # first use is refused with this documented error.
                return True
        return True
    return False


def _module_name(dotted: str, roots: dict[str, str]) -> str | None:
    root, dot, rest = dotted.partition(".")
    if root not in roots:
        return None
    return roots[root] + dot + rest


def table_names(roots: dict[str, str]) -> set[str]:
    """Dotted names in the `becomes` / `modern` columns of every AUDIT table."""
    names = set()
    for rows in audit.collect().values():
        for row in rows:
            for text in (row.becomes, row.modern):
                for dotted in _DOTTED.findall(text or ""):
                    module_name = _module_name(dotted, roots)
                    if module_name is not None:
                        names.add(module_name)
    return names


def _dotted_names(source: str) -> set[str]:
    """Full dotted names (`a.b.c`) read in `source`, import aliases resolved."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            value: ast.AST = node
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                parts.append(aliases.get(value.id, value.id))
                names.add(".".join(reversed(parts)))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _cases() -> list[pathlib.Path]:
    return sorted(
        [
            *HERE.glob("snippets/*.py"),
            *HERE.glob("scripts/*.py"),
            *(TESTS / "migrate_corpus" / "legacy").glob("*.py"),
            *(TESTS / "migrate_corpus_real" / "legacy").rglob("*.py"),
            *(HERE / "projects").rglob("*.py"),
        ],
        key=str,
    )


@functools.cache
def _added_names() -> dict[str, str]:
    """Dotted name -> a script it was written into, for each name a rewrite added."""
    added: dict[str, str] = {}
    for path in _cases():
        source = path.read_text()
        try:
            result = migrate.migrate_source(source, str(path))
        except migrate.MigrationError:
            continue
        for dotted in sorted(_dotted_names(result.migrated) - _dotted_names(source)):
            added.setdefault(dotted, path.name)
    return added


def written_names(roots: dict[str, str]) -> dict[str, str]:
    """Name (root spelled as a module) -> a script a rewrite wrote it into."""
    written = {}
    for dotted, script in _added_names().items():
        module_name = _module_name(dotted, roots)
        if module_name is not None:
            written.setdefault(module_name, script)
    return written


def _resolves_here(name: str) -> bool:
    """`resolve(name)`, and True where only an extra's package is missing here."""
    try:
        return resolve(name)
    except OptionalPackageMissing:
        return True


def test_every_table_name_resolves_on_the_installed_pair():
    names = table_names(_ROOTS)
    assert len(names) > 300  # The TF1 renames alone are more.
    missing = sorted(
        name
        for name in names
        if name not in _PENDING and _numpy_has(name) and not _resolves_here(name)
    )
    assert not missing, f"rules write names this TF/Keras pair does not have: {missing}"


@pytest.mark.slow  # Migrates every test script and corpus file (about 20 s).
def test_every_written_name_resolves_on_the_installed_pair():
    written = written_names(_ROOTS)
    assert written  # The cases do get rewritten.
    missing = {
        name: script
        for name, script in sorted(written.items())
        if name not in _PENDING and not _resolves_here(name)
    }
    assert not missing, f"rewrites wrote names this TF/Keras pair does not have: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("root", sorted(set(_LIBRARY_ROOTS.values())))
def test_library_names_resolve_where_the_library_is_installed(root):
    pytest.importorskip(root)
    roots = {alias: module for alias, module in _LIBRARY_ROOTS.items() if module == root}
    names = table_names(roots) | set(written_names(roots))
    missing = sorted(name for name in names if not resolve(name))
    assert not missing, f"rules write {root} names that do not exist: {missing}"


def test_a_name_of_an_extra_resolves_where_its_package_is_installed():
    # The full suite installs the `test` extra (albumentations among them).
    pytest.importorskip("albumentations")
    assert resolve("parallel_keras.compat.albumentations.IAASharpen")
    assert not resolve("parallel_keras.compat.albumentations.NoSuchTransform")


def test_resolve_tells_a_missing_name():
    assert resolve("tensorflow.compat.v1.ConfigProto")
    assert resolve("keras.ops.argmax")
    assert not resolve("keras.backend.set_session")
    assert not resolve("tensorflow.no_such_function")
