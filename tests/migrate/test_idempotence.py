# SPDX-License-Identifier: Apache-2.0
"""Every issue-20 case: a second run changes nothing, and no name is unbound.

The cases are the snippets in `snippets/`, the seed scripts 10-12 of
`tests/migrate_corpus/legacy/`, and the projects in `projects/` (each
migrated as a folder). For each: migrating the output again gives the same
text and no change, and the rewrite never makes code use a name that is
not bound where it runs (`tf` before `import tensorflow`, a deleted config).
"""

from __future__ import annotations

import ast
import builtins
import pathlib

import pytest

from parallel_keras import migrate

HERE = pathlib.Path(__file__).parent
CORPUS = HERE.parent / "migrate_corpus" / "legacy"
CASES = sorted(
    [
        *HERE.glob("snippets/*.py"),
        *(CORPUS.glob("1[0-9]_*.py")),
        *(HERE / "projects").rglob("*.py"),
    ],
    key=str,
)
# Names the snippets use without binding them (fragments of scripts).
_FREE = {"x", "y", "n", "model", "compute"}


def _unbound(source: str) -> set[str]:
    """Names loaded at module level before anything binds them, and names
    loaded in functions that the module never binds."""
    tree = ast.parse(source)
    bound = set(dir(builtins)) | _FREE
    everywhere = set(bound)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            everywhere.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            everywhere.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            everywhere.add(node.name)
        elif isinstance(node, ast.arg):
            everywhere.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            everywhere.add(node.name)
    missing = set()
    for statement in tree.body:
        nested = set()
        for node in ast.walk(statement):
            if (
                isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef))
                and node is not statement
            ):
                nested.update(id(n) for n in ast.walk(node))
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            nested.update(id(n) for n in ast.walk(statement))
        if isinstance(statement, (ast.For, ast.With)):  # Bound before the body runs.
            targets = (
                [statement.target]
                if isinstance(statement, ast.For)
                else [item.optional_vars for item in statement.items if item.optional_vars]
            )
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if id(node) in nested:
                    if node.id not in everywhere:
                        missing.add(node.id)
                elif node.id not in bound and node.id not in _comprehension_names(statement):
                    missing.add(node.id)
        for node in ast.walk(statement):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            bound.add(statement.name)
    return missing


def _comprehension_names(statement) -> set[str]:
    return {
        target.id
        for node in ast.walk(statement)
        if isinstance(node, ast.comprehension)
        for target in ast.walk(node.target)
        if isinstance(target, ast.Name)
    }


def _results() -> dict[pathlib.Path, migrate.MigrationResult]:
    projects = {}  # Each folder of projects/ is migrated as one project.
    for folder in (HERE / "projects").iterdir():
        project_files = [(str(p), str(p.relative_to(folder))) for p in folder.rglob("*.py")]
        projects[folder.name] = migrate.scan_project(project_files)

    def project_of(path: pathlib.Path):
        if "projects" not in path.parts:
            return None
        return projects[path.relative_to(HERE / "projects").parts[0]]

    return {
        path: migrate.migrate_source(
            path.read_text(encoding="utf-8"), path.name, project=project_of(path)
        )
        for path in CASES
    }


RESULTS = _results()


@pytest.mark.parametrize("path", CASES, ids=lambda path: str(path.relative_to(HERE.parent)))
def test_second_run_changes_nothing(path):
    result = RESULTS[path]
    project = migrate.scan_project([(str(path), path.name)]) if "projects" in path.parts else None
    again = migrate.migrate_source(result.migrated, path.name, project=project)
    assert again.migrated == result.migrated
    assert not again.report.changes
    # Flags stay flagged (their notes are in the code), and nothing new.
    assert {f.action for f in again.report.flags} <= (
        {f.action for f in result.report.flags}
        | {f.action for f in again.report.flags if f.rule == "earlier run"}
    )
    # Each note is reported again, however many say the same thing.
    assert len(again.report.flags) == len(result.report.flags)


@pytest.mark.parametrize("path", CASES, ids=lambda path: str(path.relative_to(HERE.parent)))
def test_rewrite_binds_every_name_it_uses(path):
    result = RESULTS[path]
    assert _unbound(result.migrated) <= _unbound(result.source)


def test_a_second_run_reports_each_of_two_identical_notes():
    source = (
        "from keras.models import load_model\n"
        "model = load_model('m.h5')\n"
        "batches = make_batches()\n"
        "model.fit_generator(batches, steps_per_epoch=2, workers=8)\n"
        "model.fit_generator(batches, steps_per_epoch=3, workers=8)\n"
    )
    first = migrate.migrate_source(source, "train.py")
    assert len(first.report.flags) == 2, first.report.flags
    assert first.report.flags[0].action == first.report.flags[1].action

    again = migrate.migrate_source(first.migrated, "train.py")

    assert again.migrated == first.migrated
    assert [f.rule for f in again.report.flags] == ["earlier run", "earlier run"]
    assert [f.line for f in again.report.flags] == [9, 13]


def test_the_unbound_name_check_catches_tf_before_its_import():
    assert _unbound("import os\ntf.config.x()\nimport tensorflow as tf\n") == {"tf"}
    assert _unbound("def f():\n    return config\n") == {"config"}
