# SPDX-License-Identifier: Apache-2.0
"""Compatibility: one optimizer instance compiled into several models.

`d.compile(optimizer=opt, ...)` then `combined.compile(optimizer=opt, ...)`
was Keras 2's GAN idiom: the optimizer kept slots for each model's weights
and one `iterations` counter. A Keras 3 optimizer is built for the first
model that trains and refuses the others' weights ("Unknown variable").
Every `compile` of an optimizer variable that the file compiles more than
once gets `parallel_keras.compat.shared_optimizer(opt, model)`, which builds
the optimizer for all its models' weights: Keras 2's numbers.
"""

from __future__ import annotations

import collections

import libcst as cst
from libcst import metadata

from parallel_keras.migrate import context, syntax

RULE = "optimizers"
_SHARED = "parallel_keras.compat.shared_optimizer"


def _optimizer_arg(ctx: context.Context, call: cst.Call) -> cst.Arg | None:
    """The `optimizer` argument of `x.compile(...)` when it is a variable.

    `x` is not a module the file imports: `re.compile(pattern)` (twice, on
    the same pattern variable) compiles a regular expression, not a model.
    """
    if syntax.method_name(call) != "compile" or not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    if not isinstance(receiver, (cst.Name, cst.Attribute)) or syntax.dotted(receiver) is None:
        return None
    names = ctx.qualified_names(receiver)
    if names and all(name.source == metadata.QualifiedNameSource.IMPORT for name in names):
        return None
    arg = syntax.keyword(call, "optimizer")
    if arg is None:
        positional = syntax.positional(call)
        arg = positional[0] if positional else None
    if (
        arg is None
        or not isinstance(arg.value, (cst.Name, cst.Attribute))
        or syntax.dotted(arg.value) is None
    ):
        return None  # a call (its own instance), a string name, absent
    return arg


class SharedOptimizerRule(context.Rule):
    """`m1.compile(optimizer=opt)`, `m2.compile(optimizer=opt)` -> `shared_optimizer(opt, m)`."""

    name = RULE

    def __init__(self):
        self._compiles: collections.Counter = collections.Counter()

    def visit_Call(self, ctx, node):
        arg = _optimizer_arg(ctx, node)
        if arg is not None:
            self._compiles[syntax.dotted(arg.value)] += 1

    def leave_Call(self, ctx, original, updated):
        arg = _optimizer_arg(ctx, original)
        if arg is None or self._compiles[syntax.dotted(arg.value)] < 2:
            return updated
        optimizer = syntax.dotted(arg.value)
        model = syntax.code(updated.func.value)
        ctx.require_import("parallel_keras.compat")
        ctx.compat(
            original,
            RULE,
            f"`{model}.compile(optimizer={optimizer})` -> `{_SHARED}({optimizer}, {model})`: "
            f"{optimizer} is compiled into several models; Keras 3 builds an optimizer for one "
            "model's weights, shared_optimizer builds it for all of them (Keras 2's slots per "
            "weight and one iterations counter)",
            modern=f"give {model} its own optimizer (each then counts its own steps)",
        )
        wrapped = syntax.expression(f"{_SHARED}({optimizer}, {model})")
        index = list(original.args).index(arg)
        return updated.with_changes(
            args=[
                a.with_changes(value=wrapped) if i == index else a
                for i, a in enumerate(updated.args)
            ]
        )


AUDIT = [
    (
        "one optimizer variable in several model.compile(optimizer=...) calls",
        f"{_SHARED}(optimizer, model)",
        "Keras 3 builds an optimizer for one model's weights (Unknown variable)",
        "an optimizer per model (each counts its own steps)",
    ),
]
