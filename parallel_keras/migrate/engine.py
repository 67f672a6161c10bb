# SPDX-License-Identifier: Apache-2.0
"""The migration engine: one pass over a file's syntax tree, rules plug in.

A file is parsed once with LibCST (which keeps every comment and space). Each
module of `rules/` contributes a `Rule` (`context.py`, below both the rules
and this engine, defines it): `visit_<Node>` hooks run in a read-only scan
of the original tree (to learn, e.g., which names hold layers), then
`leave_<Node>` hooks rewrite the tree in a single transform. Both passes see
the original tree's metadata, so every change and flag is reported at its
line in the original file. Imports the rewrites need are added last.

Nothing here imports TensorFlow or Keras, and the user's code is never run.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import sys
import textwrap
from collections.abc import Sequence

import libcst as cst
from libcst import metadata
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from parallel_keras.migrate import context as context_lib
from parallel_keras.migrate import line_wrap, syntax
from parallel_keras.migrate import project as project_lib
from parallel_keras.migrate import report as report_lib
from parallel_keras.migrate import rules as rules_lib

# Comments the migration writes into the code start with this, so a second
# run recognizes them and adds nothing (idempotence).
NOTE_PREFIX = "# parallel-keras migrate: "
_NOTE_CONTINUATION = "#   "
# A note's words per line: PEP 8's 72 for comments, fewer where the statement's
# indentation would take the note past the file's limit, never fewer than this.
_NOTE_WIDTH = 72
_NARROWEST_NOTE = 40

_STATEMENT_TYPES = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
# What `Context.line` and `Context.qualified_name` read, in both passes.
_METADATA = (metadata.PositionProvider, metadata.QualifiedNameProvider)


class MigrationError(ValueError):
    """A file that cannot be migrated: it does not parse as Python.

    The message names the file, the line and column, and the fix; the file
    is left as it was.
    """


class _Scanner(cst.CSTVisitor):
    METADATA_DEPENDENCIES = _METADATA

    def __init__(self, ctx: context_lib.Context):
        super().__init__()
        self._ctx = ctx
        self._depth = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._ctx.read_metadata_from(self)
        if isinstance(node, (*_STATEMENT_TYPES, cst.Module)):
            self._record_notes(node)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self._depth += 1
        elif self._depth == 0:
            self._record_module_level(node)
        name = f"visit_{type(node).__name__}"
        for rule in self._ctx.rules:
            hook = getattr(rule, name, None)
            if hook is not None:
                hook(self._ctx, node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self._depth -= 1

    def _record_notes(self, statement) -> None:
        """Remembers the notes for a person an earlier run wrote above `statement`."""
        # Comments above a file's first statement are the module's header.
        lines = statement.header if isinstance(statement, cst.Module) else statement.leading_lines
        for words in _note_words(lines):
            action = " ".join(" ".join(words).split())
            if action and not action.startswith(context_lib.CHANGE_NOTE_PREFIX):
                self._ctx.carried_flags.append((self._ctx.line(statement), action))

    def _record_module_level(self, node: cst.CSTNode) -> None:
        ctx = self._ctx
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    name = target.target.value
                    literal = node.value
                    if (
                        not isinstance(literal, (cst.SimpleString, cst.FormattedString))
                        or name in ctx.string_constants
                    ):
                        ctx.string_constants[name] = None
                    else:
                        ctx.string_constants[name] = literal
        elif isinstance(node, cst.Import):
            for alias in node.names:
                if syntax.dotted(alias.name) == "keras":
                    ctx.keras_names.append(alias.evaluated_alias or "keras")
                elif syntax.dotted(alias.name) == "tensorflow":
                    ctx.tf_names.append(alias.evaluated_alias or "tensorflow")
        elif isinstance(node, cst.ImportFrom) and node.module is not None:
            if isinstance(node.names, cst.ImportStar):
                return
            if syntax.dotted(node.module) == "tensorflow":
                for alias in node.names:
                    if syntax.dotted(alias.name) == "keras":
                        ctx.keras_names.append(alias.evaluated_alias or "keras")


class _Transformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = _METADATA

    def __init__(self, ctx: context_lib.Context):
        super().__init__()
        self._ctx = ctx
        # The indentation of each block the visit is in (the module's: "").
        self._indents = [""]
        self._unit = "    "

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._ctx.read_metadata_from(self)
        if isinstance(node, cst.Module):
            self._unit = node.default_indent
        elif isinstance(node, cst.IndentedBlock):
            indent = node.indent if node.indent is not None else self._unit
            self._indents.append(self._indents[-1] + indent)
        if isinstance(node, _STATEMENT_TYPES):
            self._ctx.open_statement()
        return True

    def on_leave(self, original_node, updated_node):
        ctx = self._ctx
        ctx.read_metadata_from(self)
        updated_node = _leave(ctx, ctx.rules, original_node, updated_node)
        if original_node in ctx.literal_renames and isinstance(
            updated_node, (cst.SimpleString, cst.FormattedString)
        ):
            updated_node, rule, message, note = ctx.literal_renames[original_node]
            ctx.change(original_node, rule, message, note=note)
        if isinstance(original_node, _STATEMENT_TYPES):
            notes = ctx.close_statement()
            # The note's lines end within the file's limit, as its code does.
            indent = len(self._indents[-1].expandtabs())
            width = min(_NOTE_WIDTH, max(_NARROWEST_NOTE, ctx.line_limit - indent))
            updated_node = _with_notes(updated_node, notes, ctx.header_notes, width)
        elif isinstance(original_node, cst.IndentedBlock):
            self._indents.pop()
        return updated_node


def _leave(ctx, rules, original_node, updated_node):
    """Runs each rule's `leave_<Node>` hook on `updated_node`, in order.

    A rule that splits a statement (`from keras.utils import
    multi_gpu_model, np_utils` -> two import lines) returns a
    FlattenSentinel; the later rules then see each piece of the node's type,
    so the leftover `from keras.utils import np_utils` is rewritten in the
    same run (a second run changes nothing). Reports still name the
    original line.
    """
    node_type = type(original_node)
    name = f"leave_{node_type.__name__}"
    for index, rule in enumerate(rules):
        if isinstance(updated_node, cst.FlattenSentinel):
            pieces: list[cst.CSTNode] = []
            for piece in updated_node.nodes:
                if isinstance(piece, node_type):
                    piece = _leave(ctx, rules[index:], original_node, piece)
                if isinstance(piece, cst.FlattenSentinel):
                    pieces.extend(piece.nodes)
                elif not isinstance(piece, cst.RemovalSentinel):
                    pieces.append(piece)
            if not pieces:
                return cst.RemoveFromParent()
            return cst.FlattenSentinel(pieces) if len(pieces) > 1 else pieces[0]
        if not isinstance(updated_node, node_type):
            break
        hook = getattr(rule, name, None)
        if hook is not None:
            updated_node = hook(ctx, original_node, updated_node)
    return updated_node


def _note_words(lines) -> list[list[str]]:
    """The text of each note in comment `lines`: its first line's, then its continuations'."""
    notes: list[list[str]] = []
    for empty_line in lines:
        text = empty_line.comment.value if empty_line.comment else ""
        if text.startswith(NOTE_PREFIX):
            notes.append([text[len(NOTE_PREFIX) :]])
        elif text.startswith(_NOTE_CONTINUATION) and notes and notes[-1]:
            notes[-1].append(text[len(_NOTE_CONTINUATION) :])
        elif notes and notes[-1]:
            notes.append([])  # Another comment ends the note.
    return [words for words in notes if words]


def _written_notes(lines) -> frozenset[str]:
    """The notes in comment `lines`, whitespace normalized, to recognize one once written.

    A note is recognized by its words, not by how they were wrapped: a second
    run may wrap at another width (the file's longest line changed). Each
    note's first lines count too, in case a comment of the user's that looks
    like a continuation follows it.
    """
    found = set()
    for words in _note_words(lines):
        for end in range(1, len(words) + 1):
            found.add(" ".join(" ".join(words[:end]).split()))
    return frozenset(found)


def _with_notes(
    statement,
    notes: list[str],
    header_notes: frozenset[str] = frozenset(),
    width: int = _NOTE_WIDTH,
):
    """Adds each note as comment lines above `statement`, once, `width` words wide."""
    if notes and isinstance(statement, cst.FlattenSentinel):
        first, *rest = statement.nodes
        return cst.FlattenSentinel([_with_notes(first, notes, header_notes, width), *rest])
    if not notes or not hasattr(statement, "leading_lines"):
        return statement
    leading = list(statement.leading_lines)
    # The first statement's notes live in the module's header.
    existing = set(_written_notes(leading) | header_notes)
    for note in dict.fromkeys(notes):
        normalized = " ".join(note.split())
        if normalized in existing:
            continue
        wrapped = textwrap.wrap(
            note,
            width=width,
            initial_indent=NOTE_PREFIX,
            subsequent_indent="#   ",
            # A path or name longer than a line stays whole, so a second run
            # reads back the same words (and recognizes its own note).
            break_long_words=False,
            break_on_hyphens=False,
        )
        leading.extend(cst.EmptyLine(indent=True, comment=cst.Comment(text)) for text in wrapped)
        existing.add(normalized)
    return statement.with_changes(leading_lines=leading)


@dataclasses.dataclass
class MigrationResult:
    """The rewritten source of one file and its report.

    Args:
        source: The original text.
        migrated: The rewritten text (equal to `source` when nothing changed).
        report: Changes and flags.
    """

    source: str
    migrated: str
    report: report_lib.FileReport

    @property
    def changed(self) -> bool:
        """Whether the rewritten text differs from the original."""
        return self.source != self.migrated


def migrate_source(
    source: str,
    path: str = "<string>",
    rules: list[context_lib.Rule] | None = None,
    project: project_lib.Project | None = None,
) -> MigrationResult:
    """Rewrites one legacy Keras 2 script's text for Keras 3 + parallel_keras.

    Args:
        source: The script's text.
        path: Name used in the report and in errors. Defaults to "<string>".
        rules: Rewrite families to apply. Defaults to `rules.default_rules()`.
        project: What the other files migrated with this one define
            (`project.scan_project`). Defaults to None: `source` alone.

    Returns:
        A `MigrationResult` with the new text and the report.

    Raises:
        MigrationError: If `source` does not parse as Python; the message
            gives the line and column.
        ValueError: If `rules` list a rule before a rule that writes a
            fact it reads (see `context.fact_order_problems`).

    Example:

    >>> result = migrate_source("from keras.utils import multi_gpu_model\\n")
    >>> result.migrated
    'from parallel_keras import multi_gpu_model\\n'
    """
    try:
        # Python's own parser (parse only, nothing runs) reports the exact
        # line and column; LibCST's error positions can point past the error.
        ast.parse(source, filename=path)
        module = cst.parse_module(source)
    except SyntaxError as error:
        raise MigrationError(
            f"{path} is not valid Python: line {error.lineno}, column "
            f"{error.offset}: {error.msg}. Fix the syntax error and migrate "
            "again."
        ) from error
    except cst.ParserSyntaxError as error:
        raise MigrationError(
            f"{path} could not be parsed: line {error.editor_line}, column "
            f"{error.editor_column}: {error.message}. Fix the syntax error and "
            "migrate again."
        ) from error
    rules = rules if rules is not None else rules_lib.default_rules()
    problems = context_lib.fact_order_problems(rules)
    if problems:
        raise ValueError(
            "Every rule must come after the rules that write the facts it reads in the "
            "same phase (their `writes`/`reads` declarations). Received: rules="
            f"{[type(rule).__name__ for rule in rules]}, where {' '.join(problems)} "
            "Reorder the list passed as `rules` (or fix the declarations)."
        )
    ctx = context_lib.Context(rules, path, project)
    ctx.header_notes = _written_notes(module.header)
    ctx.line_limit = line_wrap.line_limit(source)
    wrapper = metadata.MetadataWrapper(module)
    wrapper.visit(_Scanner(ctx))
    for rule in ctx.rules:
        rule.finish_scan(ctx)
    ctx.read_metadata_from(None)
    migrated = wrapper.visit(_Transformer(ctx))
    migrated = _remove_imports_left_unused(source, migrated, ctx)
    if ctx.required_imports:
        migrated = _add_imports(migrated, ctx)
    migrated = line_wrap.wrap_long_lines(source, migrated)
    _carry_over_flags(ctx)
    ctx.report.sort()
    return MigrationResult(source, migrated.code, ctx.report)


def _loaded_names(tree: ast.AST) -> set[str]:
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _remove_imports_left_unused(
    source: str, migrated: cst.Module, ctx: context_lib.Context
) -> cst.Module:
    """Removes the module-level imports the rewrites left unused.

    Only an import whose name the original code read and the rewritten code
    no longer reads goes (`from scipy import misc` once every `misc.imresize`
    is rewritten); an import unused before the migration stays, and so do
    imports from TensorFlow, Keras and NumPy, which still import (a script
    may rely on `import tensorflow` having run before Keras), and from
    Python's standard library.
    """
    try:
        before_tree = ast.parse(source)
        after_tree = ast.parse(migrated.code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return migrated
    before, after = _loaded_names(before_tree), _loaded_names(after_tree)
    gone = before - after
    if not gone:
        return migrated
    codemod_context = CodemodContext()
    removed: list[str] = []
    lines = {  # Import text -> its line in the original file.
        text: statement.lineno
        for statement in before_tree.body
        for text in _import_texts(statement)
    }
    for statement in after_tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound in gone and (
                    not _kept_module(alias.name) or alias.name in _BACKEND_MODULES
                ):
                    RemoveImportsVisitor.remove_unused_import(
                        codemod_context, alias.name, asname=alias.asname
                    )
                    removed += _import_texts(ast.Import(names=[alias]))
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                removable = not _kept_module(statement.module) or (
                    statement.module in _BACKEND_MODULES
                    or f"{statement.module}.{alias.name}" in _BACKEND_MODULES
                )
                if removable and (alias.asname or alias.name) in gone and alias.name != "*":
                    RemoveImportsVisitor.remove_unused_import(
                        codemod_context, statement.module, alias.name, alias.asname
                    )
                    removed.append(f"from {statement.module} import {alias.name}")
    if not removed:
        return migrated
    cleaned = RemoveImportsVisitor(codemod_context).transform_module(migrated)
    if cleaned.code != migrated.code:
        for text in removed:
            ctx.report.changes.append(
                report_lib.Change(
                    lines.get(text, 0), "imports", f"removed `{text}`: the rewrites left it unused"
                )
            )
    return cleaned


# Imports never removed: they still import, and scripts lean on them.
_KEPT_ROOTS = frozenset({"tensorflow", "keras", "numpy", "parallel_keras"})
# Except Keras 2's backend once the rewrites took every use out of it: most
# of its names do not exist in Keras 3's (`from keras.backend import
# int_shape` fails to import once `int_shape(x)` reads `tuple(x.shape)`), and
# `from keras import backend as K` left with no `K.` is dead code.
_BACKEND_MODULES = frozenset({"keras.backend", "tensorflow.keras.backend"})


def _kept_module(module: str) -> bool:
    root = module.split(".")[0]
    return root in _KEPT_ROOTS or root in sys.stdlib_module_names


def _import_texts(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Import):
        return [
            f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in statement.names
        ]
    if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
        return [f"from {statement.module} import {a.name}" for a in statement.names]
    return []


def _carry_over_flags(ctx: context_lib.Context) -> None:
    """Reports again what an earlier run left for a person.

    The pattern an earlier run flagged may be gone (rewritten around it),
    but its note stays in the code until a person deletes it, so `--strict`
    keeps failing on migrated code until the item is dealt with.
    """
    # A note is reported again unless this run flags its item itself; two
    # notes with the same words (the same item on two lines) are two items.
    fresh = collections.Counter(" ".join(flag.action.split()) for flag in ctx.report.flags)
    for line, action in ctx.carried_flags:
        if fresh[action]:
            fresh[action] -= 1
            continue
        ctx.report.flags.append(
            report_lib.Flag(
                line,
                "earlier run",
                "an earlier `parallel-keras migrate` run left a note here for a "
                "person (delete the note once done)",
                action,
            )
        )


# Imports that start TensorFlow (as the sessions rule reads them).
_STARTS_TENSORFLOW = ("tensorflow", "keras")
_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def _sets_environment(statement: cst.CSTNode) -> bool:
    """`os.environ[...] = ...` (e.g. CUDA_VISIBLE_DEVICES) at module level."""
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Assign)
        and any(
            isinstance(target.target, cst.Subscript)
            and syntax.dotted(target.target.value) == "os.environ"
            for target in small.targets
        )
        for small in statement.body
    )


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _after_environment_setup(
    module: cst.Module, before: set[str], original: cst.Module
) -> cst.Module:
    """Moves added imports below the script's environment set-up.

    Scripts set `os.environ['CUDA_VISIBLE_DEVICES']` between their first
    imports and TensorFlow's, so TensorFlow starts with it set. An import
    the migration adds goes after every import of that opening stretch
    (imports, docstring, environment variables), never above the variable.
    """
    body = list(module.body)
    added = [s for s in body if _is_import(s) and syntax.code(s).strip() not in before]
    rest = [s for s in body if not any(s is a for a in added)]
    prelude_end = 0
    for index, statement in enumerate(rest):
        docstring = (
            index == 0
            and isinstance(statement, cst.SimpleStatementLine)
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, cst.SimpleString)
        )
        if not (_is_import(statement) or _sets_environment(statement) or docstring):
            break
        prelude_end = index + 1
    if not added:
        return module
    later = _environment_before_tensorflow(rest)
    if later > prelude_end and not _reads(rest[:later], _bound_names(added)):
        # `import cv2; cv2.setNumThreads(0); ...; os.environ[...] = ...`, then
        # Keras: the variable is set further down, still before TensorFlow.
        prelude_end = later
    elif not any(_sets_environment(s) for s in rest[:prelude_end]):
        return module
    added = [a.with_changes(leading_lines=[]) for a in added]
    if len(rest) == len(original.body):
        # The blank lines the import adder put around its imports, undone.
        rest = [
            now.with_changes(leading_lines=was.leading_lines)
            for now, was in zip(rest, original.body)
        ]
    return module.with_changes(body=rest[:prelude_end] + added + rest[prelude_end:])


def _environment_before_tensorflow(body: Sequence[_Statement]) -> int:
    """How many statements run up to the last `os.environ[...] =` before TensorFlow's import.

    0 when no module-level statement sets the environment before the
    script's first `tensorflow`/`keras` import (or in a script without one).
    """
    end = 0
    for index, statement in enumerate(body):
        if _imports_tensorflow(statement):
            break
        if _sets_environment(statement):
            end = index + 1
    return end


def _imports_tensorflow(statement: _Statement) -> bool:
    """Whether a module-level import statement imports `tensorflow` or `keras`."""
    if not _is_import(statement):
        return False
    modules = [
        syntax.dotted(alias.name) or ""
        for node in syntax.findall(statement, cst.Import)
        for alias in node.names
    ]
    modules += [
        syntax.dotted(node.module) or ""
        for node in syntax.findall(statement, cst.ImportFrom)
        if node.module is not None
    ]
    return any(module.split(".")[0] in _STARTS_TENSORFLOW for module in modules)


def _bound_names(imports: Sequence[_Statement]) -> set[str]:
    """The names `import a.b` / `import a as b` statements bind."""
    names = set()
    for statement in imports:
        for node in syntax.findall(statement, cst.Import):
            for alias in node.names:
                if alias.asname is not None:
                    names.add(syntax.code(alias.asname.name))
                else:
                    names.add((syntax.dotted(alias.name) or "").split(".")[0])
    return names


def _reads(statements: Sequence[_Statement], names: set[str]) -> bool:
    """Whether any of `statements` mentions one of `names` (conservatively)."""
    try:
        tree = ast.parse(cst.Module(body=statements).code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return any(isinstance(node, ast.Name) and node.id in names for node in ast.walk(tree))


def _read_in(module: cst.Module, modules: list[str]) -> list[str]:
    """The required imports whose bound name the rewritten code reads.

    A rule asks for `import keras` when it may write `keras.ops...`; the
    form it wrote in the end may not use it (`K.update(v, x)` ->
    `v.assign(x)`).
    """
    try:
        loaded = _loaded_names(ast.parse(module.code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return list(modules)
    return [name for name in modules if name.split(".")[0] in loaded]


def _add_imports(module: cst.Module, ctx: context_lib.Context) -> cst.Module:
    codemod_context = CodemodContext()
    modules = ctx.required_imports
    # `import parallel_keras.callbacks` also binds `parallel_keras`.
    if "parallel_keras.callbacks" in modules:
        modules = [name for name in modules if name != "parallel_keras"]
    modules = _read_in(module, modules)
    if not modules:
        return module
    before = set(module.code.splitlines())
    for name in modules:
        AddImportsVisitor.add_needed_import(codemod_context, name)
    original = module
    module = AddImportsVisitor(codemod_context).transform_module(module)
    module = _after_environment_setup(module, before, original)
    for number, text in enumerate(module.code.splitlines(), start=1):
        if text.startswith("import ") and text not in before:
            ctx.report.changes.append(
                report_lib.Change(
                    number,
                    "imports",
                    f"added `{text}` for the rewritten names",
                    in_output=True,
                )
            )
    return module
