# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `model.add_loss(<symbolic tensor>)` -> `parallel_keras.compat.add_loss`.

The Keras 2 VAE idiom adds a loss computed from the functional model's own
tensors (`vae.add_loss(K.mean(reconstruction + kl))`); Keras 3's
`Model.add_loss` refuses a symbolic tensor. `parallel_keras.compat.add_loss`
computes the same expression from the model's inputs at every step and adds
it to the total loss, as Keras 2 did (also for a `multi_gpu_model` built
from the model). `self.add_loss(...)` inside a layer is Keras 3's own form
and stays. The call is recorded in `ctx.facts.symbolic_loss_calls` (during the
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
AUDIT = [
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
