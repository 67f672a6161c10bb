# SPDX-License-Identifier: Apache-2.0
"""Rewrite: a Keras 2 optimizer class handed around as a value, built elsewhere.

Hyper-parameter searches and configurable trainers pick the optimizer class
at run time and build it far from where it is named:

    def optimizerbyname(name):
        return {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop}[name]

    def trainmodel(..., optimizerclass=Adam, learningrate=None):
        optimizer = optimizerclass(lr=learningrate)

The call `optimizerclass(lr=...)` is not the Keras optimizer's to the
optimizers rule, so Keras 3 rejects `lr=` there (and would ignore `decay=`,
use its own default learning rate and, for RMSprop, Adagrad and Nadam, its
own formula). The class itself is rewritten where it is handed on -- a
value of a dict, list, tuple or set literal, the value of an assignment, a
parameter's default, an argument of a call, a returned value -- to
`parallel_keras.compat.keras2_optimizer(<class>)`: a subclass whose
`__init__` takes Keras 2's arguments (`lr=`, `decay=` as Keras 2's inverse
time decay, Keras 2's default learning rate) and whose updates are Keras
2's where Keras 3's formula differs, whoever calls it. Only standalone Keras
2's `keras.optimizers` classes: `tf.keras` ones already had Keras 3's
defaults and formulas.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import optimizers

RULE = "optimizer values"
_TARGET = "parallel_keras.compat.keras2_optimizer"
# Calls whose arguments are the class itself, not something to build later.
_TYPE_CHECKS = frozenset(
    {"isinstance", "issubclass", "super", "type", "getattr", "hasattr", "setattr", "id", "repr"}
)
AUDIT = [
    (
        "keras.optimizers.Adam (any Keras 2 optimizer class) as a value (dict/list/tuple "
        "item, assignment, default, argument, return), built elsewhere with Keras 2's arguments",
        f"{_TARGET}(keras.optimizers.Adam)",
        "the call that builds it (`optimizerclass(lr=...)`) is out of migrate's sight: the "
        "class takes Keras 2's lr=/decay=, default learning rate and formula wherever it is "
        "called",
        "keras.optimizers.Adam(learning_rate=...) (Keras 3's defaults and formulas)",
    ),
]


def _optimizer_class(ctx: context.Context, node: cst.BaseExpression) -> str | None:
    """`Adam` for a reference to standalone Keras 2's `keras.optimizers.Adam`."""
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    module, _, name = (ctx.qualified_name(node) or "").rpartition(".")
    name = optimizers.LOWERCASE_ALIASES.get(name, name)
    if module != "keras.optimizers" or name not in optimizers.LEGACY_SIGNATURES:
        return None
    if not optimizers.standalone_keras(ctx, node):
        return None
    return name


class OptimizerValueRule(context.Rule):
    """`{"adam": Adam}` -> `{"adam": parallel_keras.compat.keras2_optimizer(Adam)}`."""

    name = RULE

    def __init__(self):
        # Original nodes that name the class itself (type checks, compat calls).
        self._kept: set[cst.CSTNode] = set()

    def _wrap(self, ctx, original, updated):
        if original in self._kept:
            return updated
        name = _optimizer_class(ctx, original)
        if name is None:
            return updated
        ctx.require_import("parallel_keras")
        written = syntax.code(updated)
        differences = ["Keras 2's lr=/decay="]
        if optimizers.LEGACY_DEFAULT_LR[name] != optimizers.KERAS3_DEFAULT_LR[name]:
            differences.append(f"default learning rate {optimizers.LEGACY_DEFAULT_LR[name]}")
        if name in optimizers.KERAS2_FORMULAS:
            differences.append("update formula")
        ctx.compat(
            original,
            RULE,
            f"`{written}` -> `{_TARGET}({written})`: the optimizer class is built elsewhere "
            f"(out of migrate's sight), with {', '.join(differences)} kept",
            f"`keras.optimizers.{name}` built with `learning_rate=` (Keras 3's defaults and "
            "formulas)",
        )
        return cst.Call(func=syntax.expression(_TARGET), args=[cst.Arg(updated)])

    def leave_DictElement(self, ctx, original, updated):
        return updated.with_changes(value=self._wrap(ctx, original.value, updated.value))

    def leave_Element(self, ctx, original, updated):
        return updated.with_changes(value=self._wrap(ctx, original.value, updated.value))

    def leave_Assign(self, ctx, original, updated):
        return updated.with_changes(value=self._wrap(ctx, original.value, updated.value))

    def leave_AnnAssign(self, ctx, original, updated):
        if original.value is None or updated.value is None:
            return updated
        return updated.with_changes(value=self._wrap(ctx, original.value, updated.value))

    def leave_Param(self, ctx, original, updated):
        if original.default is None or updated.default is None:
            return updated
        return updated.with_changes(default=self._wrap(ctx, original.default, updated.default))

    def leave_Return(self, ctx, original, updated):
        if original.value is None or updated.value is None:
            return updated
        return updated.with_changes(value=self._wrap(ctx, original.value, updated.value))

    def visit_Call(self, ctx, node):
        callee = ctx.qualified_name(node.func) or syntax.dotted(node.func) or ""
        callee = callee.removeprefix("builtins.")
        if callee in _TYPE_CHECKS or callee.startswith("parallel_keras."):
            # `isinstance(x, (Adam, SGD))`, an earlier run's `keras2_optimizer(Adam)`.
            for arg in node.args:
                self._kept.update(syntax.findall(arg, cst.Name))
                self._kept.update(syntax.findall(arg, cst.Attribute))

    def leave_Call(self, ctx, original, updated):
        if len(original.args) != len(updated.args):
            return updated  # Another rule reshaped the arguments: leave them.
        return updated.with_changes(
            args=[
                new.with_changes(value=self._wrap(ctx, old.value, new.value))
                if old.star == ""
                else new
                for old, new in zip(original.args, updated.args)
            ]
        )
