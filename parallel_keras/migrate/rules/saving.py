# SPDX-License-Identifier: Apache-2.0
"""Rewrite: save formats and file suffixes that Keras 3 rejects.

Keras 3 decides the format from the suffix and rejects `save_format=`
unless the suffix already says it (`keras/src/saving/saving_api.py`):

* `save_weights` needs `.weights.h5` (Keras 2 wrote `.h5` or a TF
  checkpoint prefix);
* `save` needs `.keras`, `.h5` or `.hdf5` (Keras 2 wrote a SavedModel folder
  for a path without suffix);
* `ModelCheckpoint` needs `.weights.h5` with `save_weights_only=True`, else
  `.keras` or `.h5` (not `.hdf5`).

A path written as a literal (directly, through a module-level constant,
`os.path.join(..., 'x.h5')` or `dir + 'x.h5'`) gets the suffix Keras 3
needs, with a comment; a literal the same script loads from is renamed the
same way so the script still finds its file. Paths built any other way are
flagged.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "save formats"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple] = [
    (
        "model.save_weights('x.h5')",
        "model.save_weights('x.weights.h5')",
        "save_weights writes only .weights.h5",
    ),
    ("model.save('x') (no suffix)", "model.save('x.keras')", "Keras 3 writes no SavedModel folder"),
    (
        "save(..., save_format=...)",
        "(argument removed)",
        "Keras 3 takes the format from the suffix",
    ),
    (
        "load of a path the script saves later",
        "(kept)",
        "it reads what an earlier Keras 2 run wrote, which Keras 3 still reads; flagged with "
        "the new name to resume from",
    ),
    ("load of a path the script saved before", "the renamed path", "one file, one name"),
    ("<own class>.save('x.json')", "(kept)", "not a Keras object"),
    (
        "model.save(<computed path>) / load_model of a computed path",
        "parallel_keras.compat.save_model(model, path) / parallel_keras.compat.load_model(path)",
        "Keras 2's HDF5 model file at exactly the path computed (Keras 3 takes only .keras, "
        ".h5 and .hdf5)",
        "compute a path ending in '.keras' and call model.save(path)",
    ),
    (
        "load_model(path) of any path but a '.keras' literal",
        "parallel_keras.compat.load_model(path)",
        "Keras 2's load_model: the optimizer comes back as saved (compat.keras2_optimizer "
        "keeps Keras 2's formula and decay) and an HDF5 file resumes training",
        "load a '.keras' file with keras.models.load_model(path)",
    ),
    (
        "model.save_weights(<computed path>) / load_weights of a computed path",
        "parallel_keras.compat.save_weights(model, path)",
        "Keras 2's HDF5 layout at exactly the path computed (Keras 3 takes only .weights.h5)",
        "compute a path ending in '.weights.h5' and call model.save_weights(path)",
    ),
]

_LOAD_MODEL_NAMES = frozenset({"keras.models.load_model", "keras.saving.load_model"})
# Why every Keras 2 model load but a '.keras' one goes through compat.load_model.
_RESUME = (
    "Keras 2's load_model, which gives back the optimizer as it was saved (a "
    "compat.keras2_optimizer keeps Keras 2's formula and decay; Keras 3's loader "
    "gives its own class) and lets an HDF5 model file resume training"
)


def _keras_archive(ctx: context.Context, path: cst.BaseExpression | None) -> bool:
    """Whether `path` is a string literal naming a `.keras` archive (once renamed)."""
    literal = path_literal(ctx, path) if path is not None else None
    if not isinstance(literal, cst.SimpleString):
        return False
    text = syntax.string_text(literal)
    fix = ctx.facts.renamed_paths.get(text)
    if fix is not None:
        text = text[: len(text) - len(fix[0])] + fix[1]
    return text.endswith(".keras")


_SAVE_MODEL_NAMES = frozenset({"keras.models.save_model", "keras.saving.save_model"})


def weights_suffix(text: str) -> tuple[str, str] | None:
    """(old tail, new tail) that makes `text` end with `.weights.h5`."""
    if text.endswith(".weights.h5"):
        return None
    for suffix in (".hdf5", ".h5"):
        if text.endswith(suffix):
            return suffix, ".weights.h5"
    return "", ".weights.h5"


def model_suffix(text: str, allow_hdf5: bool) -> tuple[str, str] | None:
    """(old tail, new tail) that gives `text` a suffix Keras 3 saves to."""
    if text.endswith((".keras", ".h5")) or (allow_hdf5 and text.endswith(".hdf5")):
        return None
    if text.endswith(".hdf5"):
        return ".hdf5", ".h5"
    return "", ".keras"


def path_literal(ctx: context.Context, node: cst.BaseExpression) -> syntax.StringLiteral | None:
    """The literal that ends the path `node` evaluates to, or None."""
    if isinstance(node, (cst.SimpleString, cst.FormattedString)):
        return node
    if isinstance(node, cst.Name):
        return ctx.string_constants.get(node.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return path_literal(ctx, node.right)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return path_literal(ctx, node.left)  # 'gen_%d.h5' % step
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and isinstance(node.func.value, cst.SimpleString)
    ):
        return node.func.value  # 'gen_{}.h5'.format(step)
    if isinstance(node, cst.Call) and syntax.dotted(node.func) in (
        "os.path.join",
        "path.join",
        "osp.join",
    ):
        positional = syntax.positional(node)
        if positional and len(positional) == len(node.args):
            return path_literal(ctx, positional[-1].value)
    return None


def register_rename(ctx: context.Context, literal, fix: tuple[str, str] | None, why: str) -> bool:
    """Schedules a suffix fix of `literal`; False when there is nothing to do."""
    if fix is None or literal in ctx.literal_renames:
        return False
    old_tail, new_tail = fix
    old_text = syntax.string_text(literal)
    new_literal = syntax.with_string_text(literal, old_tail, new_tail)
    new_text = syntax.string_text(new_literal)
    message = f"path '{old_text}' -> '{new_text}': {why}"
    note = f"{context.CHANGE_NOTE_PREFIX}: {why} (was '{old_text}')."
    ctx.literal_renames[literal] = (new_literal, RULE, message, note)
    renamed = ctx.facts.renamed_paths
    if isinstance(literal, cst.SimpleString):
        renamed[old_text] = (old_tail, new_tail)
    return True


def path_argument(call: cst.Call, index: int, keyword: str = "filepath"):
    """The argument at `index` or passed as `keyword`, if any."""
    arg = syntax.keyword(call, keyword)
    if arg is not None:
        return arg.value
    positional = syntax.positional(call)
    if len(positional) > index:
        return positional[index].value
    return None


class SavePathRule(context.Rule):
    """`save_weights('x.h5', save_format='h5')` -> `save_weights('x.weights.h5')`."""

    name = RULE

    writes = {"renamed_paths": context.Phase.FINISH_SCAN, "first_save_line": context.Phase.SCAN}
    reads = {
        "renamed_paths": context.Phase.FINISH_SCAN,
        "first_save_line": context.Phase.FINISH_SCAN,
    }

    def __init__(self):
        self._loads: list[tuple[cst.Call, int]] = []
        self._saves: list[tuple[cst.Call, str]] = []
        # Classes of the script with their own `save` (not Keras objects),
        # and the names holding their instances.
        self._own_savers: set[str] = set()
        self._own_saver_names: set[str] = set()
        self._stale_loads: dict[int, str] = {}  # id(literal) -> the new name
        # save_weights calls whose path is computed at run time.
        self._unresolved_weight_paths: list[cst.Call] = []
        # model.save / save_model calls whose path is computed at run time.
        self._unresolved_model_paths: list[cst.Call] = []

    def visit_ClassDef(self, ctx, node):
        bases = {syntax.dotted(base.value) or "" for base in node.bases}
        if any(base.split(".")[-1] in ("Model", "Sequential") for base in bases):
            return
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value in (
                "save",
                "save_weights",
            ):
                self._own_savers.add(node.name.value)

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call) and syntax.dotted(node.value.func) in self._own_savers:
            for target in node.targets:
                name = syntax.dotted(target.target)
                if name:
                    self._own_saver_names.add(name)

    def visit_Call(self, ctx, node):
        method = syntax.method_name(node)
        qualified = ctx.qualified_name(node.func)
        if method in ("save_weights", "save") and self._own_receiver(node):
            return
        if (qualified or "").startswith("parallel_keras."):
            return  # Already parallel_keras.compat's (an earlier run).
        if method == "save_weights":
            self._saves.append((node, "weights"))
            _note_save_line(ctx, node)
        elif qualified in _SAVE_MODEL_NAMES:
            self._saves.append((node, "save_model"))
            _note_save_line(ctx, node)
        elif method == "save" and _looks_like_model_save(node):
            self._saves.append((node, "save"))
            _note_save_line(ctx, node)
        elif method == "load_weights" or qualified in _LOAD_MODEL_NAMES:
            self._loads.append((node, ctx.line(node)))

    def _own_receiver(self, call: cst.Call) -> bool:
        if not isinstance(call.func, cst.Attribute):
            return False
        receiver = syntax.dotted(call.func.value) or ""
        return receiver in self._own_saver_names or receiver in self._own_savers

    def finish_scan(self, ctx):
        for call, kind in self._saves:
            if kind == "weights":
                self._fix(
                    ctx,
                    call,
                    path_argument(call, 0),
                    weights_suffix,
                    "save_weights writes only '.weights.h5' files",
                )
            elif kind == "save_model":
                self._fix(
                    ctx,
                    call,
                    path_argument(call, 1),
                    _model_fix,
                    "save_model writes '.keras' or '.h5' files",
                )
            else:
                self._fix(
                    ctx,
                    call,
                    path_argument(call, 0),
                    _model_fix,
                    "save writes '.keras' or '.h5' files",
                )
        # A file this script saves and then loads must keep one name; a load
        # that comes before the save reads what an earlier (Keras 2) run
        # wrote, which Keras 3 still reads under its old name.
        renamed = ctx.facts.renamed_paths
        first_save = ctx.facts.first_save_line
        for call, line in self._loads:
            literal = path_literal(ctx, path_argument(call, 0))
            if literal is None or not isinstance(literal, cst.SimpleString):
                continue
            text = syntax.string_text(literal)
            fix = renamed.get(text)
            if fix is None:
                continue
            if line < first_save.get(text, 0):
                self._stale_loads[id(call)] = text[: len(text) - len(fix[0])] + fix[1]
                continue
            register_rename(ctx, literal, fix, "renamed like the file this script saves")

    def _fix(self, ctx, call, path, suffix_for, why):
        if path is None:
            return
        literal = path_literal(ctx, path)
        if literal is None:
            if suffix_for is weights_suffix:
                self._unresolved_weight_paths.append(call)
            else:
                self._unresolved_model_paths.append(call)
            return
        text = syntax.string_text(literal)
        if text.rsplit("/", 1)[-1].rpartition(".")[2].lower() in _NOT_KERAS_SUFFIXES:
            return  # Not a Keras file (a JSON, a pickle): Keras could not write it.
        register_rename(ctx, literal, suffix_for(text), why)

    def leave_Call(self, ctx, original, updated):
        method = syntax.method_name(updated)
        if (
            method in ("save", "save_weights")
            or ctx.qualified_name(original.func) in _SAVE_MODEL_NAMES
        ):
            save_format = syntax.keyword(updated, "save_format")
            if save_format is not None:
                value = syntax.code(save_format.value)
                ctx.change(
                    original,
                    RULE,
                    f"removed `save_format={value}`: Keras 3 takes the format "
                    "from the file suffix and rejects the argument otherwise",
                )
                updated = syntax.remove_args(updated, [save_format])
        if id(original) in self._stale_loads:
            new_name = self._stale_loads[id(original)]
            ctx.flag(
                original,
                RULE,
                "this load comes before the script saves the same file, so it reads "
                "what an earlier Keras 2 run wrote (Keras 3 still reads it); the save "
                f"now writes '{new_name}'",
                f"keep this path to start from the Keras 2 file; to resume from a run "
                f"of the migrated script, load '{new_name}' when it exists.",
            )
        if any(original is call for call in self._unresolved_weight_paths):
            if isinstance(updated.func, cst.Attribute) and not syntax.has_star(updated):
                return self._compat_weights(ctx, original, updated, "save_weights")
            ctx.flag(
                original,
                RULE,
                "save_weights path is computed, so its suffix could not be checked",
                "make sure the path ends with '.weights.h5' (Keras 3 rejects "
                "any other suffix for save_weights).",
            )
        if any(original is call for call in self._unresolved_model_paths):
            if not syntax.has_star(updated):
                return self._compat_model(ctx, original, updated, "save_model")
        if (
            ctx.qualified_name(original.func) in _LOAD_MODEL_NAMES
            # A computed model.save wrote Keras 2's HDF5 there (any suffix).
            and self._unresolved_model_paths
            and not syntax.has_star(updated)
            and path_argument(original, 0) is not None
            and path_literal(ctx, path_argument(original, 0)) is None
        ):
            return self._compat_model(ctx, original, updated, "load_model")
        if (
            ctx.qualified_name(original.func) in _LOAD_MODEL_NAMES
            and not syntax.has_star(updated)
            and not _keras_archive(ctx, path_argument(original, 0))
        ):
            return self._compat_model(ctx, original, updated, "load_model", _RESUME)
        if (
            method == "load_weights"
            # A computed save_weights wrote Keras 2's HDF5 there, or `by_name=`
            # says the file is Keras 2's (Keras 3's loader converts no CuDNN
            # weights and matches other names).
            and (self._unresolved_weight_paths or syntax.keyword(original, "by_name") is not None)
            and not (ctx.qualified_name(original.func) or "").startswith("parallel_keras.")
            and isinstance(updated.func, cst.Attribute)
            and not syntax.has_star(updated)
            and path_argument(original, 0) is not None
            and path_literal(ctx, path_argument(original, 0)) is None
        ):
            # The file a computed save_weights wrote (Keras 2's HDF5 at any path).
            return self._compat_weights(ctx, original, updated, "load_weights")
        return updated

    def _compat_model(self, ctx, original, updated, function, why=None):
        """`model.save(path)` / `load_model(path)` -> `parallel_keras.compat.<function>`."""
        target = f"parallel_keras.compat.{function}"
        ctx.require_import("parallel_keras")
        if why is None:
            why = (
                "Keras 2's HDF5 model file at exactly the path computed (Keras 3 takes only "
                "'.keras', '.h5' and '.hdf5' there)"
            )
            shown = f"{syntax.code(original.func)}(<computed path>)"
            modern = (
                "compute a path ending in '.keras' and call model.save(path) / "
                "keras.models.load_model(path)"
            )
        else:
            shown = f"{syntax.code(original.func)}(...)"
            modern = (
                "save to a path ending in '.keras' with model.save(path) and load it with "
                "keras.models.load_model(path) (its optimizer then is Keras 3's class)"
            )
        ctx.compat(original, RULE, f"`{shown}` -> `{target}(...)`: {why}", modern)
        if function == "save_model" and syntax.method_name(original) == "save":
            receiver = updated.func.value
            return updated.with_changes(
                func=syntax.expression(target),
                args=[cst.Arg(receiver, comma=_COMMA), *updated.args],
            )
        return updated.with_changes(func=syntax.expression(target))

    def _compat_weights(self, ctx, original, updated, method):
        """`model.save_weights(path)` -> `parallel_keras.compat.save_weights(model, path)`."""
        target = f"parallel_keras.compat.{method}"
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(original.func)}(<computed path>)` -> `{target}(model, path)`: "
            "Keras 2's HDF5 weights at exactly the path computed (Keras 3's "
            f"{method} takes only '.weights.h5')",
            f"compute a path ending in '.weights.h5' and call model.{method}(path)",
        )
        receiver = updated.func.value
        return updated.with_changes(
            func=syntax.expression(target),
            args=[cst.Arg(receiver, comma=_COMMA), *updated.args],
        )


_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
_NOT_KERAS_SUFFIXES = frozenset(
    "json pkl pickle txt csv npy npz yaml yml png jpg log pt pth ckpt".split()
)


def _note_save_line(ctx: context.Context, call: cst.Call) -> None:
    """Remembers the first line that saves each literal path (scan only)."""
    for index in (0, 1):
        literal = path_literal(ctx, path_argument(call, index))
        if isinstance(literal, cst.SimpleString):
            lines = ctx.facts.first_save_line
            lines.setdefault(syntax.string_text(literal), ctx.line(call))


def _model_fix(text: str):
    return model_suffix(text, allow_hdf5=True)


def _looks_like_model_save(call: cst.Call) -> bool:
    """`model.save(...)`, not `np.save` or `saver.save(sess, ...)`."""
    if syntax.keyword(call, "save_format") is not None:
        return True
    if not isinstance(call.func, cst.Attribute):
        return False
    receiver = syntax.dotted(call.func.value) or ""
    return "model" in receiver.split(".")[-1].lower()
