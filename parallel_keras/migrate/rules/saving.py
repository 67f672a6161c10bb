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

from parallel_keras.migrate import context
from parallel_keras.migrate import syntax

RULE = "save formats"

_LOAD_MODEL_NAMES = frozenset(
    {"keras.models.load_model", "keras.saving.load_model"}
)
_SAVE_MODEL_NAMES = frozenset(
    {"keras.models.save_model", "keras.saving.save_model"}
)


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


def path_literal(ctx: context.Context, node: cst.BaseExpression):
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


def register_rename(
    ctx: context.Context, literal, fix: tuple[str, str] | None, why: str
) -> bool:
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
    renamed = ctx.shared.setdefault("renamed_paths", {})
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

    def __init__(self):
        self._loads = []

    def visit_Call(self, ctx, node):
        method = syntax.method_name(node)
        qualified = ctx.qualified_name(node.func)
        if method == "save_weights":
            self._fix(ctx, node, path_argument(node, 0), weights_suffix, "save_weights writes only '.weights.h5' files")
        elif qualified in _SAVE_MODEL_NAMES:
            self._fix(ctx, node, path_argument(node, 1), _model_fix, "save_model writes '.keras' or '.h5' files")
        elif method == "save" and _looks_like_model_save(node):
            self._fix(ctx, node, path_argument(node, 0), _model_fix, "save writes '.keras' or '.h5' files")
        elif method == "load_weights" or qualified in _LOAD_MODEL_NAMES:
            self._loads.append(node)

    def finish_scan(self, ctx):
        # A file this script saves and then loads must keep one name.
        renamed = ctx.shared.get("renamed_paths", {})
        for call in self._loads:
            literal = path_literal(ctx, path_argument(call, 0))
            if literal is None or not isinstance(literal, cst.SimpleString):
                continue
            fix = renamed.get(syntax.string_text(literal))
            if fix is not None:
                register_rename(ctx, literal, fix, "renamed like the file this script saves")

    def _fix(self, ctx, call, path, suffix_for, why):
        if path is None:
            return
        literal = path_literal(ctx, path)
        if literal is None:
            if suffix_for is weights_suffix:
                ctx.shared.setdefault("unresolved_weight_paths", []).append(call)
            return
        register_rename(ctx, literal, suffix_for(syntax.string_text(literal)), why)

    def leave_Call(self, ctx, original, updated):
        method = syntax.method_name(updated)
        if method in ("save", "save_weights") or ctx.qualified_name(original.func) in _SAVE_MODEL_NAMES:
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
        if any(original is call for call in ctx.shared.get("unresolved_weight_paths", ())):
            ctx.flag(
                original,
                RULE,
                "save_weights path is computed, so its suffix could not be checked",
                "make sure the path ends with '.weights.h5' (Keras 3 rejects "
                "any other suffix for save_weights).",
            )
        return updated


def _model_fix(text: str):
    return model_suffix(text, allow_hdf5=True)


def _looks_like_model_save(call: cst.Call) -> bool:
    """`model.save(...)`, not `np.save` or `saver.save(sess, ...)`."""
    if syntax.keyword(call, "save_format") is not None:
        return True
    receiver = syntax.dotted(call.func.value) or ""
    return "model" in receiver.split(".")[-1].lower()
