# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `compile(..., target_tensors=[<placeholder>])` -> the argument removed.

Keras 2 fed each batch's targets into `target_tensors`; given placeholders
made only for it (`t = tf.placeholder('float32', shape=(None,) * 4)`), the
argument only declared a target of another shape than the model's output
(a matting loss reading 11 channels of `y_true` against a 1-channel
prediction). Keras 3's `compile` has no `target_tensors`, and takes targets of
any shape from `fit`'s data: removing the argument (and the placeholder, when
nothing else reads it) keeps the meaning. Tensors that hold data (a TF queue's
output) have no such equivalent and are flagged: pass them as `y` to `fit`.
"""

from __future__ import annotations

import collections

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "target tensors"

_PLACEHOLDERS = frozenset(
    {
        "tensorflow.placeholder",
        "tensorflow.compat.v1.placeholder",
        "keras.backend.placeholder",
    }
)

AUDIT: list[tuple[str, str | None, str]] = [
    (
        "model.compile(..., target_tensors=[tf.placeholder(...)])",
        "(removed, with the placeholder)",
        "a placeholder only declared the target's shape; Keras 3 takes targets of any "
        "shape from fit's data",
    ),
    ("model.compile(..., target_tensors=None)", "(removed)", "Keras 2's default: none"),
    (
        "model.compile(..., target_tensors=None if c else [t])",
        "**parallel_keras.compat.target_tensors(None if c else [t])",
        "None gives no argument (Keras 2's default); tensors raise with the fix",
    ),
    (
        "model.compile(..., target_tensors=[<a tensor holding data>])",
        None,
        "Keras 3's compile has no target_tensors: pass the data as y to fit",
    ),
]


_COMPAT_TARGETS = "parallel_keras.compat.target_tensors"


def _none_at_times(value: cst.BaseExpression) -> bool:
    """`None`, or `None if c else [t]` / `[t] if c else None`: Keras 2's default at times."""
    if isinstance(value, cst.Name) and value.value == "None":
        return True
    if isinstance(value, cst.IfExp):
        return any(
            isinstance(branch, cst.Name) and branch.value == "None"
            for branch in (value.body, value.orelse)
        )
    return False


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, (cst.List, cst.Tuple)):
        return [element.value for element in value.elements]
    return [value]


class TargetTensorsRule(context.Rule):
    """`model.compile(opt, loss, target_tensors=[t])` -> `model.compile(opt, loss)`."""

    name = RULE
    writes = {"handled_calls": context.Phase.FINISH_SCAN}

    def __init__(self):
        self._placeholders: dict[str, cst.Call] = {}  # name -> its placeholder call
        self._uses: collections.Counter = collections.Counter()
        self._given: collections.Counter = collections.Counter()  # uses in target_tensors
        self._dropped: set[str] = set()  # Placeholder names whose line goes.
        self._compiles: list[list[str | cst.BaseExpression | None]] = []  # target_tensors elements

    # -- Scan ------------------------------------------------------------------

    def visit_Assign(self, ctx, node):
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.Call)
            and ctx.qualified_name(node.value.func) in _PLACEHOLDERS
        ):
            self._placeholders[node.targets[0].target.value] = node.value

    def visit_Name(self, ctx, node):
        self._uses[node.value] += 1

    def visit_Call(self, ctx, node):
        given = self._target_tensors(node)
        if given is None:
            return
        # Each element: a name (placeholder or not: known after the scan), an
        # inline placeholder call, or None for anything else.
        self._compiles.append(
            [
                element.value
                if isinstance(element, cst.Name)
                else (element if self._inline_placeholder(ctx, element) else None)
                for element in _elements(given.value)
            ]
        )
        for element in _elements(given.value):
            if isinstance(element, cst.Name):
                self._given[element.value] += 1

    def finish_scan(self, ctx):
        handled = ctx.facts.handled_calls
        for name, call in self._placeholders.items():
            # The assignment's own target is one use; every other one is here.
            if self._given[name] and self._uses[name] == self._given[name] + 1:
                self._dropped.add(name)
                handled.update((id(call), id(call.func)))
        # Inline ones (`target_tensors=[K.placeholder(...)]`) go with the argument;
        # the TF1 names and backend rules leave them to this one.
        for elements in self._compiles:
            if all(
                isinstance(element, cst.Call) or element in self._dropped for element in elements
            ):
                handled.update(
                    node
                    for element in elements
                    if isinstance(element, cst.Call)
                    for node in (id(element), id(element.func))
                )

    # -- Rewrite -------------------------------------------------------------------

    @staticmethod
    def _target_tensors(call: cst.Call) -> cst.Arg | None:
        if syntax.method_name(call) != "compile":
            return None
        return syntax.keyword(call, "target_tensors")

    @staticmethod
    def _inline_placeholder(ctx, element: cst.BaseExpression) -> bool:
        return isinstance(element, cst.Call) and ctx.qualified_name(element.func) in _PLACEHOLDERS

    def _declares_only(self, ctx, element: cst.BaseExpression) -> bool:
        if isinstance(element, cst.Name):
            return element.value in self._dropped
        return self._inline_placeholder(ctx, element)

    def leave_Call(self, ctx, original, updated):
        given = self._target_tensors(original)
        if given is None or syntax.has_star(original):
            return updated
        if _none_at_times(given.value):
            return self._decided_at_run_time(ctx, original, updated, given.value)
        elements = _elements(given.value)
        if not all(self._declares_only(ctx, element) for element in elements):
            ctx.flag(
                original,
                RULE,
                "`target_tensors=` holds tensors other than placeholders made only for it",
                "Keras 3's compile has no target_tensors: remove it and pass those "
                "targets to fit as y (a NumPy array, a tf.data.Dataset or a generator "
                "yielding (x, y)).",
            )
            return updated
        ctx.change(
            original,
            RULE,
            f"removed `target_tensors={syntax.code(given.value)}`: its placeholders only "
            "declared the targets' shape; Keras 3 takes targets of any shape from fit's data",
        )
        arg = syntax.keyword(updated, "target_tensors")
        return syntax.remove_args(updated, [arg]) if arg is not None else updated

    @staticmethod
    def _decided_at_run_time(ctx, original, updated, value):
        """`target_tensors=None if c else [t]` -> `**parallel_keras.compat.target_tensors(...)`."""
        arg = syntax.keyword(updated, "target_tensors")
        if arg is None:
            return updated
        if isinstance(value, cst.Name) and value.value == "None":
            ctx.change(original, RULE, "removed `target_tensors=None`: Keras 2's default (none)")
            return syntax.remove_args(updated, [arg])
        ctx.require_import("parallel_keras")
        ctx.flag(
            original,
            RULE,
            f"`target_tensors={syntax.code(value)}` is None or tensors, decided at run time",
            "None runs as before (Keras 2's no target tensors: parallel_keras.compat."
            "target_tensors gives no argument); where it holds tensors the call raises, as "
            "Keras 3's compile has no target_tensors: pass those targets to fit as y.",
        )
        spread = cst.Arg(
            value=cst.Call(
                func=syntax.expression(_COMPAT_TARGETS),
                args=[cst.Arg(value)],
            ),
            star="**",
            comma=arg.comma,
        )
        return updated.with_changes(args=[spread if a is arg else a for a in updated.args])

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(original.body) != 1 or not isinstance(original.body[0], cst.Assign):
            return updated
        assign = original.body[0]
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if not (isinstance(target, cst.Name) and target.value in self._dropped):
            return updated
        if assign.value is not self._placeholders.get(target.value):
            return updated
        ctx.change(
            original,
            RULE,
            f"removed `{target.value} = {syntax.code(assign.value)}`: a placeholder only "
            "given to compile's target_tensors",
        )
        return cst.RemoveFromParent()
