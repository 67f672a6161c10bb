# SPDX-License-Identifier: Apache-2.0
"""What a rewrite rule is, and what it sees: the `Rule` base and `Context`.

Every rule in `parallel_keras.migrate.rules` subclasses `Rule` and receives
one `Context` per file; the engine (`engine.py`) drives both passes and is
the only caller of the methods that set a context's owner and note stack.
This module sits below the rules and the engine, so rules never import the
engine.

What one rule learns and another uses travels in `Context.facts` (`Facts`,
one typed field per fact). Each rule declares the facts it writes and reads,
and in which `Phase`; `fact_order_problems` checks a rule list against those
declarations (the engine refuses a list that fails it), so the order in
`rules/__init__.py` is checked, not only remembered.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar

import libcst as cst
from libcst import metadata

from parallel_keras.migrate import keras2_modules, syntax
from parallel_keras.migrate import report as report_lib

# Notes that explain a rewrite (not a request to a person) start with this;
# every other note is an open item, reported again by a later run.
CHANGE_NOTE_PREFIX = "Keras 3 needs this suffix"


class Phase(enum.IntEnum):
    """When a rule touches a fact. The engine runs the phases in this order.

    Within one phase the engine runs the rules in list order (at each node,
    for the hooks), so a fact written and read in the same phase needs its
    writers listed before its readers; a fact written in an earlier phase is
    complete before any reader of a later one runs.
    """

    SCAN = 1  # `visit_<Node>` hooks over the original tree.
    FINISH_SCAN = 2  # `finish_scan`, once per rule after the scan.
    REWRITE = 3  # `leave_<Node>` hooks, which build the new tree.


@dataclasses.dataclass
class Facts:
    """What one rule learns about a file and another rule reads.

    Nodes are named by `id()` of the original tree's node (the tree lives as
    long as the file's migration). A rule declares each field it touches in
    `Rule.writes` / `Rule.reads`; state only one rule reads stays on the rule.
    """

    # Calls (and their callee nodes) another rule rewrites or owns, which the
    # generic rules leave alone: a GPU listing the GPU-count rule rewrites, a
    # placeholder target_tensors drops.
    handled_calls: set[int] = dataclasses.field(default_factory=set)
    # `model.add_loss(<tensor>)` calls made `parallel_keras.compat.add_loss`
    # (decided during the rewrite, so the model-API rule comes after that rule).
    symbolic_loss_calls: set[int] = dataclasses.field(default_factory=set)
    # Local aliases of `multi_gpu_model` (`import multi_gpu_model as mgm`).
    multi_gpu_names: set[str] = dataclasses.field(default_factory=set)
    # Keras 1 `merge` names: those whose every call is rewritten (the import
    # rule drops their import), and those with a call left for a person.
    keras1_merge_names: set[str] = dataclasses.field(default_factory=set)
    keras1_merge_kept: set[str] = dataclasses.field(default_factory=set)
    # Generator constructor calls whose loader options move to `fit`.
    loader_options_moved: set[int] = dataclasses.field(default_factory=set)
    # `from keras.legacy import interfaces` lines only removed decorators used,
    # and those decorators' attribute nodes.
    unused_legacy_interfaces: set[int] = dataclasses.field(default_factory=set)
    removed_decorators: set[int] = dataclasses.field(default_factory=set)
    # Literal path -> (old suffix, new suffix) of every saved path renamed.
    renamed_paths: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    # Literal path -> first line that saves it (model saves and checkpoints).
    first_save_line: dict[str, int] = dataclasses.field(default_factory=dict)


FACT_NAMES = frozenset(field.name for field in dataclasses.fields(Facts))


class Rule:
    """Base class of a rewrite family.

    Subclasses define `visit_<NodeType>(ctx, node)` hooks for the scan and
    `leave_<NodeType>(ctx, original, updated)` hooks for the rewrite; a
    `leave_` hook returns the (possibly new) updated node. `finish_scan(ctx)`
    runs between the two passes.

    A rule that shares what it learns declares it: `writes` maps each field
    of `Facts` it adds to onto the last `Phase` in which it does, `reads`
    each field it reads onto the first `Phase` in which it does (a helper of
    another module that touches a fact counts for the rule calling it).
    """

    name = "rule"
    writes: ClassVar[Mapping[str, Phase]] = {}
    reads: ClassVar[Mapping[str, Phase]] = {}

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
        # Notes an earlier run wrote above the first statement (LibCST's
        # module header), whitespace normalized (engine._written_notes).
        self.header_notes: frozenset[str] = frozenset()
        # The longest line the file's lines may have (line_wrap.line_limit).
        self.line_limit = 79
        # Original literal node -> (new literal, rule, message, note): path
        # suffix fixes decided during the scan, applied during the rewrite.
        self.literal_renames: dict[cst.CSTNode, tuple] = {}
        # What one rule learns and another reads (each rule declares which).
        self.facts = Facts()
        # Set through the engine's calls only (`read_metadata_from`,
        # `open_statement`, `close_statement`): the visitor whose metadata
        # answers `line`/`qualified_name`, and one list of notes per open statement.
        self._owner: cst.MetadataDependent | None = None
        self._notes: list[list[str]] = []

    # -- Driven by the engine's passes ---------------------------------------

    def read_metadata_from(self, owner: cst.MetadataDependent | None) -> None:
        """Makes `line`/`qualified_name` read `owner`'s metadata (None: outside a pass)."""
        self._owner = owner

    def open_statement(self) -> None:
        """Starts collecting the notes rules write for the statement being rewritten."""
        self._notes.append([])

    def close_statement(self) -> list[str]:
        """The notes written for the statement just rewritten (the innermost open one)."""
        return self._notes.pop()

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
        """The name `node` refers to as Keras 3 spells it, e.g. `keras.layers.Embedding`.

        `written_qualified_name`, with a name of a Keras 2 module file that
        Keras 3 removed named where Keras 3 keeps it
        (`keras.layers.embeddings.Embedding` -> `keras.layers.Embedding`,
        `keras2_modules.keras3_name`): the imports rule rewrites the import in
        the same run, so a rule matching Keras 3's name fires on the first run,
        as it does on a second one.
        """
        written = self.written_qualified_name(node)
        return keras2_modules.keras3_name(written) or written

    def written_qualified_name(self, node: cst.CSTNode) -> str | None:
        """The name `node` refers to, imports resolved, module as imported.

        `tf.keras.x` and `tensorflow.keras.x` come back as `keras.x`; a Keras 2
        module file stays (`keras.layers.embeddings.Embedding`: what the
        imports rule rewrites). A name no import binds (snippets) falls back
        to its dotted text with the conventional roots (`tf`, `K`) expanded.
        """
        names = self.written_qualified_names(node)
        if names:
            imported = [
                name for name in names if name.source == metadata.QualifiedNameSource.IMPORT
            ]
            chosen = sorted(name.name for name in (imported or names))[0]
            return syntax.canonical_name(chosen)
        # A name no import of the file binds may come from a project module's
        # `from keras import optimizers` through `from utils import *`.
        dotted = syntax.dotted(node)
        star_names = getattr(self.project, "star_names", {}).get(self.report.path, {})
        if dotted is not None and star_names:
            root, dot, rest = dotted.partition(".")
            if root in star_names:
                return syntax.canonical_name(star_names[root] + dot + rest)
        return syntax.canonical_name(syntax.fallback_name(node))

    def qualified_names(self, node: cst.CSTNode) -> set[metadata.QualifiedName]:
        """LibCST's qualified names of `node`, a Keras 2 module file's names as Keras 3's.

        `keras.engine.training.Model` becomes `keras.models.Model` (see
        `qualified_name`); every other name stays as written (no canonical
        form, no fallback): TensorFlow's copies of Keras too, which rules tell
        from standalone Keras 2 (`tensorflow.python.keras.optimizers.Adam`).
        """
        names = set()
        for name in self.written_qualified_names(node):
            keras3 = keras2_modules.keras3_name(name.name)
            if keras3 is not None and not name.name.startswith(keras2_modules.TF_KERAS_PATHS):
                name = metadata.QualifiedName(name=keras3, source=name.source)
            names.add(name)
        return names

    def written_qualified_names(self, node: cst.CSTNode) -> set[metadata.QualifiedName]:
        """LibCST's qualified names of `node` as written (no mapping, no fallback)."""
        return set(self._metadata_owner().get_metadata(metadata.QualifiedNameProvider, node, set()))

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
        self.report.changes.append(report_lib.Change(self.line(node), rule, message, modern=modern))
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


def fact_order_problems(rules: list[Rule]) -> list[str]:
    """What in `rules`' order would make a rule read a fact before it is complete.

    A reader must not read a fact in an earlier phase than a writer writes
    it, and in the same phase it must come after every writer.

    Args:
        rules: Rules in the order the engine applies them.

    Returns:
        One sentence per problem (empty when the order is sound), naming the
        fact, the two rules, and their phases.
    """
    problems = []
    for index, rule in enumerate(rules):
        for fact in (*rule.writes, *rule.reads):
            if fact not in FACT_NAMES:
                problems.append(
                    f"{type(rule).__name__} declares `{fact}`, which is not a field of "
                    f"Facts ({', '.join(sorted(FACT_NAMES))})."
                )
        for fact, read_phase in rule.reads.items():
            for writer_index, writer in enumerate(rules):
                write_phase = writer.writes.get(fact)
                if writer is rule or write_phase is None:
                    continue
                late = write_phase > read_phase or (
                    write_phase == read_phase and writer_index > index
                )
                if late:
                    problems.append(
                        f"{type(rule).__name__} (position {index}) reads `{fact}` in "
                        f"{read_phase.name}, but {type(writer).__name__} (position "
                        f"{writer_index}) writes it in {write_phase.name}"
                        + (" after it." if write_phase == read_phase else ", a later phase.")
                    )
    return problems
