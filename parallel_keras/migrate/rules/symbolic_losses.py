# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `model.add_loss(<symbolic tensor>)` -> `parallel_keras.compat.add_loss`.

The Keras 2 VAE idiom adds a loss computed from the functional model's own
tensors (`vae.add_loss(K.mean(reconstruction + kl))`); Keras 3's
`Model.add_loss` refuses a symbolic tensor. `parallel_keras.compat.add_loss`
computes the same expression from the model's inputs at every step and adds
it to the total loss, as Keras 2 did (also for a `multi_gpu_model` built
from the model). `self.add_loss(...)` inside a layer is Keras 3's own form
and stays.

A loss made by a factory called on a variable (`model.compile(loss=
loss_total(inputs_mask))`, `loss=self.loss_fn(mask)`) may close over one of the
model's tensors, which Keras 2's graph fed with the batch and Keras 3 hands
to the loss symbolically: it becomes `parallel_keras.compat.closure_loss(model,
loss_total(inputs_mask))`, which gives such a tensor its batch values while the
loss runs (a loss that closes over none is returned unchanged). The call is recorded in `ctx.facts.symbolic_loss_calls` (during the
rewrite, so this rule comes before the model-API rule) so that rule does not
flag it.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "symbolic losses"
_TARGET = "parallel_keras.compat.add_loss"
_MODERN = (
    "compute the loss in a layer whose call(self, inputs) does self.add_loss(<the "
    "same expression of inputs>) and returns inputs[0], used in the model"
)
_CLOSURE_TARGET = "parallel_keras.compat.closure_loss"
_CLOSURE_MODERN = (
    "pass the tensor to the loss as data (a train_step reading it from x, or a layer "
    "calling self.add_loss on it)"
)
AUDIT = [
    (
        "model.compile(loss=make_loss(<variable>)) (a loss closing over a model tensor)",
        f"loss={_CLOSURE_TARGET}(model, make_loss(...))",
        "the closed-over tensor holds its batch values while the loss runs, as Keras 2's "
        "graph fed it",
        _CLOSURE_MODERN,
    ),
    (
        "model.add_loss(<symbolic tensor>)",
        f"{_TARGET}(model, loss)",
        "the loss computed from the model's inputs at every step and added to the "
        "total, as Keras 2 did",
        _MODERN,
    ),
]


class SymbolicLossRule(context.Rule):
    """`vae.add_loss(loss)` -> `parallel_keras.compat.add_loss(vae, loss)`."""

    name = RULE
    writes = {"symbolic_loss_calls": context.Phase.REWRITE}

    def leave_Call(self, ctx, original, updated):
        if syntax.method_name(original) == "compile":
            return _closure_loss(ctx, original, updated)
        if syntax.method_name(original) != "add_loss" or syntax.has_star(updated):
            return updated
        owner = updated.func.value
        if isinstance(owner, cst.Name) and owner.value == "self":
            return updated  # Inside a layer or model: Keras 3's own form.
        if (ctx.qualified_name(original.func) or "").startswith("parallel_keras."):
            return updated
        positional = syntax.positional(updated)
        if len(positional) != 1:
            return updated
        ctx.facts.symbolic_loss_calls.add(id(original))
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(original.func)}(loss)` -> `{_TARGET}({syntax.code(owner)}, loss)`: "
            "Keras 3 refuses a symbolic loss on a model; this adds it to the total loss "
            "at every step, as Keras 2 did",
            _MODERN,
        )
        loss = positional[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Call(
            func=syntax.expression(_TARGET),
            args=[
                cst.Arg(owner, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                loss,
            ],
        )


def _made_over_a_variable(ctx: context.Context, loss: cst.BaseExpression) -> bool:
    """`make_loss(mask)`, `self.loss_total(inputs_mask)`: a project factory called
    on a variable (Keras's own loss classes and literal arguments are not)."""
    if not isinstance(loss, cst.Call) or syntax.has_star(loss):
        return False
    if (ctx.qualified_name(loss.func) or "").startswith(
        ("keras.", "tensorflow.", "parallel_keras.")
    ):
        return False
    return any(isinstance(arg.value, (cst.Name, cst.Attribute)) for arg in loss.args)


def _closure_loss(ctx, original, updated):
    """`m.compile(loss=make_loss(mask))` -> `loss=parallel_keras.compat.closure_loss(m, ...)`."""
    if syntax.has_star(updated) or not isinstance(updated.func, cst.Attribute):
        return updated
    owner = updated.func.value
    args = list(updated.args)
    for index, arg in enumerate(args):
        is_loss = (arg.keyword is not None and arg.keyword.value == "loss") or (
            arg.keyword is None and index == 1
        )
        if not is_loss or not _made_over_a_variable(ctx, arg.value):
            continue
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"`loss={syntax.code(arg.value)}` -> `{_CLOSURE_TARGET}({syntax.code(owner)}, ...)`: "
            "a loss closing over a model tensor reads its batch values, as in Keras 2's graph "
            "(Keras 3 passes the symbolic tensor)",
            _CLOSURE_MODERN,
        )
        wrapped = cst.Call(
            func=syntax.expression(_CLOSURE_TARGET),
            args=[
                cst.Arg(owner, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Arg(arg.value),
            ],
        )
        args[index] = arg.with_changes(value=wrapped)
        return updated.with_changes(args=args)
    return updated
