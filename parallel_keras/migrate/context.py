# SPDX-License-Identifier: Apache-2.0
"""What a rewrite rule is, and what it sees: the `Rule` base and `Context`.

Every rule in `parallel_keras.migrate.rules` subclasses `Rule` and receives
one `Context` per file; the engine (`engine.py`) drives both passes and is
the only module that sets a context's owner and note stack. This module sits
below the rules and the engine, so rules never import the engine.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
from libcst import metadata

from parallel_keras.migrate import report as report_lib
from parallel_keras.migrate import syntax

# Notes that explain a rewrite (not a request to a person) start with this;
# every other note is an open item, reported again by a later run.
CHANGE_NOTE_PREFIX = "Keras 3 needs this suffix"


class Rule:
    """Base class of a rewrite family.

    Subclasses define `visit_<NodeType>(ctx, node)` hooks for the scan and
    `leave_<NodeType>(ctx, original, updated)` hooks for the rewrite; a
    `leave_` hook returns the (possibly new) updated node. `finish_scan(ctx)`
    runs between the two passes.
    """

    name = "rule"

    def finish_scan(self, ctx: Context) -> None:
        """Runs after the scan, before the rewrite."""


class Context:
    """What rules share while one file is migrated."""

    def __init__(self, rules: list[Rule], path: str, project: Any = None):
        self.rules = rules
        # What the other files migrated together define (`project.Project`),
        # or None for a file on its own.
        self.project = project
        self.report = report_lib.FileReport(path)
        self.required_imports: list[str] = []
        # Module-level `NAME = "literal"` assignments: name -> literal node,
        # or None when the name is assigned more than once.
        self.string_constants: dict[str, syntax.StringLiteral | None] = {}
        # Names bound to the keras module at module level (`import keras`,
        # `from tensorflow import keras`).
        self.keras_names: list[str] = []
        # Names bound to the tensorflow module at module level.
        self.tf_names: list[str] = []
        # (line, action) of notes an earlier run wrote for a person.
        self.carried_flags: list[tuple[int, str]] = []
        # Comments above the first statement (LibCST's module header).
        self.header_comments: frozenset = frozenset()
        # Original literal node -> (new literal, rule, message, note): path
        # suffix fixes decided during the scan, applied during the rewrite.
        self.literal_renames: dict[cst.CSTNode, tuple] = {}
        # Free-form state a rule shares with another rule.
        self.shared: dict[str, Any] = {}
        # Set by the engine's passes only: the visitor whose metadata answers
        # `line`/`qualified_name`, and one list of notes per open statement.
        self._owner: cst.MetadataDependent | None = None
        self._notes: list[list[str]] = []

    # -- Reading the original tree ----------------------------------------

    def _metadata_owner(self) -> cst.MetadataDependent:
        """The visitor of the pass under way, whose metadata reads the original tree."""
        if self._owner is None:
            raise RuntimeError(
                "The original tree's metadata is read only during the engine's scan and "
                "rewrite passes, which set the visitor that holds it; none is set now."
            )
        return self._owner

    def line(self, node: cst.CSTNode) -> int:
        """Line of `node` in the original file."""
        position = self._metadata_owner().get_metadata(metadata.PositionProvider, node, None)
        return position.start.line if position is not None else 0

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        """The name `node` refers to, imports resolved, e.g. `keras.utils.x`.

        `tf.keras.x` and `tensorflow.keras.x` come back as `keras.x`. A name
        no import binds (snippets) falls back to its dotted text with the
        conventional roots (`tf`, `K`) expanded.
        """
        names = self._metadata_owner().get_metadata(metadata.QualifiedNameProvider, node, set())
        if names:
            imported = [
                name for name in names if name.source == metadata.QualifiedNameSource.IMPORT
            ]
            chosen = sorted(name.name for name in (imported or names))[0]
            return syntax.canonical_name(chosen)
        return syntax.canonical_name(syntax.fallback_name(node))

    # -- Recording ---------------------------------------------------------

    def change(self, node: cst.CSTNode, rule: str, message: str, note: str | None = None) -> None:
        """Records a rewrite at `node`'s line; `note` also goes in the code."""
        self.report.changes.append(report_lib.Change(self.line(node), rule, message))
        if note and self._notes:
            self._notes[-1].append(note)

    def compat(
        self,
        node: cst.CSTNode,
        rule: str,
        message: str,
        modern: str,
        note: str | None = None,
    ) -> None:
        """Records a rewrite onto a compatibility path, and its modern form.

        Args:
            node: The rewritten node (its original line is reported).
            rule: Short name of the rewrite family.
            message: What changed and why.
            modern: What to write later to leave the compatibility path.
            note: Also written in the code when given. Defaults to None.
        """
        self.report.changes.append(
            report_lib.Change(self.line(node), rule, message, modern=modern)
        )
        if note and self._notes:
            self._notes[-1].append(note)

    def flag(self, node: cst.CSTNode, rule: str, message: str, action: str) -> None:
        """Records an item for a person; the action also goes in the code."""
        self.report.flags.append(report_lib.Flag(self.line(node), rule, message, action))
        if self._notes:
            self._notes[-1].append(action)

    def has_pending_notes(self) -> bool:
        """Whether the statement being rewritten got a note (so must stay)."""
        return bool(self._notes and self._notes[-1])

    def require_import(self, module: str) -> None:
        """Makes sure the rewritten file has `import <module>`."""
        if module not in self.required_imports:
            self.required_imports.append(module)

    def require_package(self, package: str) -> None:
        """Lists a package the migrated script needs that TensorFlow does not install."""
        if package not in self.report.requirements:
            self.report.requirements.append(package)

    def tf_module(self) -> str:
        """A name bound to the tensorflow module, importing it if none is."""
        if self.tf_names:
            return self.tf_names[0]
        self.require_import("tensorflow")
        return "tensorflow"

    def keras_module(self) -> str:
        """A name bound to the keras module, importing keras if none is."""
        if self.keras_names:
            return self.keras_names[0]
        self.require_import("keras")
        return "keras"
