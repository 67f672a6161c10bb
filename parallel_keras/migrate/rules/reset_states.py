# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2's `model.reset_states()`.

Keras 2 models reset every stateful layer with `model.reset_states()`; Keras 3
kept the method on RNN layers only (and `parallel_keras` parallel models keep
it), so on a plain Keras 3 model it raises AttributeError. Which of those a
name holds is often decided at run time (`train_model = multi_gpu_model(m)
if gpus > 1 else m`, `self.model` in a callback), so a statement
`x.reset_states()` becomes a test of the object: its own method when it has
one, else `reset_state()` of each stateful layer of the model. Calls inside
expressions (a lambda in a `LambdaCallback`) are flagged with the same code.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "model API"
_TEMPLATE = """if hasattr({x}, "reset_states"):  # parallel models and RNN layers
    {x}.reset_states()
else:  # a Keras 3 model: reset each stateful layer
    for _layer in {x}.layers:
        if getattr(_layer, "stateful", False):
            _layer.reset_state()
"""
_ACTION = (
    "Keras 3 models have no reset_states(): call it only on parallel models and RNN "
    "layers; on a Keras 3 model reset each layer (for layer in model.layers: if "
    "getattr(layer, 'stateful', False): layer.reset_state())."
)


def _reset_call(node: cst.CSTNode) -> cst.Call | None:
    if (
        isinstance(node, cst.Call)
        and syntax.method_name(node) == "reset_states"
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, (cst.Name, cst.Attribute))
    ):
        return node
    return None


def _statement_call(line: cst.SimpleStatementLine) -> cst.Call | None:
    if len(line.body) == 1 and isinstance(line.body[0], cst.Expr):
        return _reset_call(line.body[0].value)
    return None


class ResetStatesRule(context.Rule):
    """`model.reset_states()` -> the method, or each stateful layer's reset_state()."""

    name = RULE

    def __init__(self):
        self._statements: set[int] = set()  # ids of calls rewritten as statements
        self._guarded: set[int] = set()  # ids of calls already behind the hasattr test

    # -- Scan -----------------------------------------------------------------

    def visit_SimpleStatementLine(self, ctx, node):
        call = _statement_call(node)
        if call is not None:
            self._statements.add(id(call))

    def visit_If(self, ctx, node):
        test = node.test
        if (
            isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == "hasattr"
            and len(test.args) == 2
            and syntax.string_text(test.args[1].value) == "reset_states"
        ):
            guarded = self._guarded

            class _Find(cst.CSTVisitor):
                def visit_Call(self, call):
                    guarded.add(id(call))

            node.body.visit(_Find())

    # -- Rewrite --------------------------------------------------------------

    def leave_SimpleStatementLine(self, ctx, original, updated):
        call = _statement_call(original)
        updated_call = _statement_call(updated)
        if call is None or id(call) in self._guarded or updated_call is None:
            return updated
        # _reset_call's: `<receiver>.reset_states()`.
        receiver = syntax.code(cast(cst.Attribute, updated_call.func).value)
        ctx.change(
            original,
            RULE,
            f"`{receiver}.reset_states()` -> reset_states() where the "
            "object has it, else reset_state() of each stateful layer (Keras 3 "
            "models have no reset_states)",
        )
        block = cst.parse_statement(_TEMPLATE.format(x=receiver))
        return block.with_changes(leading_lines=updated.leading_lines)

    def leave_Call(self, ctx, original, updated):
        if (
            _reset_call(original) is not None
            and id(original) not in self._statements
            and id(original) not in self._guarded
        ):
            ctx.flag(
                original,
                RULE,
                "`reset_states()` inside an expression (a Keras 3 model has none)",
                _ACTION,
            )
        return updated


AUDIT = [
    (
        "<model>.reset_states()",
        "if hasattr(<model>, 'reset_states'): ... else: reset_state() of each stateful layer",
        "Keras 3 kept reset_states() on RNN layers (and parallel models) only",
    ),
    ("lambda ...: <model>.reset_states()", None, _ACTION),
]
