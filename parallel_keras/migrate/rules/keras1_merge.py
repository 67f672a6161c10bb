# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 1's `merge(inputs, mode=...)` function.

Keras 1 (and Keras 2.0's legacy shim) merged tensors with one function,
`keras.layers.merge(inputs, mode='concat', concat_axis=-1)`. Keras 2.2 and
Keras 3 have a function per mode, and `keras.layers.merge` became a module
(then vanished), so the import rule would bind `merge` to `keras.layers` and
the call would fail with "'module' object is not callable". Calls with a
literal mode become the function of that mode; the import of `merge` is
dropped by rules/imports.py once every use is such a call. A callable mode
(a lambda) or Keras 1's `output_shape=`/`dot_axes` tuples stay and are
flagged.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "Keras 1/2 spellings"
# `keras.layers.merge.merge` too: `Context.qualified_name` spells it as Keras 3 would.
_QUALIFIED = frozenset({"keras.layers.merge", "keras.legacy.layers.merge"})
# Keras 1 mode -> (Keras 3 function in keras.layers, extra keywords).
MODES = {
    "concat": ("concatenate", ()),
    "sum": ("add", ()),
    "mul": ("multiply", ()),
    "ave": ("average", ()),
    "max": ("maximum", ()),
    "dot": ("dot", ()),
    "cos": ("dot", (("normalize", "True"),)),
}
_RENAMES = {"concat_axis": "axis", "dot_axes": "axes"}
_ACTION = (
    "call the Keras 3 function of the mode from keras.layers (concatenate, add, "
    "multiply, average, maximum, dot); for a callable mode use keras.layers.Lambda "
    "on the list of tensors."
)


def _is_merge(ctx, call: cst.Call) -> bool:
    return (syntax.canonical_name(ctx.qualified_name(call.func)) or "") in _QUALIFIED


def _plan(call: cst.Call) -> tuple[str, tuple] | None:
    """The Keras 3 function for a Keras 1 merge() call, or None to flag it."""
    mode_arg = syntax.keyword(call, "mode")
    mode = "sum" if mode_arg is None else syntax.string_text(mode_arg.value)
    extra = [
        arg
        for arg in call.args
        if arg.keyword is not None and arg.keyword.value not in ("mode", "name", *_RENAMES)
    ]
    positional = [arg for arg in call.args if arg.keyword is None]
    if mode not in MODES or extra or len(positional) != 1 or positional[0].star:
        return None
    return mode, MODES[mode]


class Keras1MergeRule(context.Rule):
    """`merge([a, b], mode='concat', concat_axis=1)` -> `keras.layers.concatenate([a, b], axis=1)`."""

    name = RULE
    writes = {"keras1_merge_names": context.Phase.SCAN, "keras1_merge_kept": context.Phase.SCAN}

    def visit_Call(self, ctx, node):
        if isinstance(node.func, cst.Name) and _is_merge(ctx, node):
            if _plan(node) is not None:
                ctx.facts.keras1_merge_names.add(node.func.value)
            else:
                ctx.facts.keras1_merge_kept.add(node.func.value)

    def leave_Call(self, ctx, original, updated):
        if not _is_merge(ctx, original):
            return updated
        plan = _plan(updated)
        if plan is None:
            ctx.flag(
                original,
                RULE,
                "Keras 1's `merge(...)` with this mode/arguments has no Keras 3 twin",
                _ACTION,
            )
            return updated
        mode_arg = syntax.keyword(updated, "mode")
        mode, (function, added) = plan
        args = []
        for arg in updated.args:
            if arg is mode_arg:
                continue
            if arg.keyword is not None and arg.keyword.value in _RENAMES:
                arg = arg.with_changes(keyword=cst.Name(_RENAMES[arg.keyword.value]))
            args.append(arg)
        args += [syntax.make_arg(name, syntax.expression(value)) for name, value in added]
        args = [
            arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            for arg in args[:-1]
        ] + [args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        new = f"{ctx.keras_module()}.layers.{function}"
        ctx.change(original, RULE, f"Keras 1 `merge(..., mode={mode!r})` -> `{new}(...)`")
        return updated.with_changes(func=syntax.expression(new), args=args)


AUDIT = [
    *(
        (
            f"keras.layers.merge(..., mode='{mode}')",
            f"keras.layers.{function}(...)" + (" with normalize=True" if added else ""),
            "Keras 1's one merge function; concat_axis= -> axis=, dot_axes= -> axes=",
        )
        for mode, (function, added) in MODES.items()
    ),
    ("keras.layers.merge(..., mode=<callable>)", None, _ACTION),
]
