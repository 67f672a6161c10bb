# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `v = tf.Variable(...)` inside a layer's `call` -> one variable, made once.

Keras 2 (TF1 graphs) ran a layer's `call` once, to build the graph: a
`tf.Variable` created there was created once, and the ops that update it
(`tf.assign_add(batch_seen, 1.)`, a warm-up counter of a YOLO loss layer) ran
at every step. Keras 3 traces `call` several times (shape inference, the
train and predict functions), and `tf.function` refuses a variable created on
any call but the first. The rewrite keeps Keras 2's one variable: it is made
on the first call, outside any graph (`tf.init_scope()`), kept on the layer,
and read by every later call. Like Keras 2's, it is not one of the layer's
weights.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "variables in call"

_VARIABLES = frozenset({"tensorflow.Variable", "tensorflow.compat.v1.Variable"})

AUDIT: list[tuple[str, str | None, str]] = [
    (
        "def call(self, x): v = tf.Variable(...)",
        "made once on the first call (tf.init_scope), kept on the layer",
        "Keras 2 ran call once to build the graph; Keras 3 traces it several times",
    ),
]


class CallVariableRule(context.Rule):
    """`batch_seen = tf.Variable(0.)` in `call` -> one variable kept on the layer."""

    name = RULE

    def __init__(self):
        self._lines: set[int] = set()  # `v = tf.Variable(...)` lines of a call method

    def visit_ClassDef(self, ctx, node):
        for method in syntax.statements(node.body):
            if not (
                isinstance(method, cst.FunctionDef)
                and method.name.value == "call"
                and method.params.params
            ):
                continue
            nested = {
                id(line)
                for inner in syntax.findall(method.body, cst.FunctionDef)
                for line in syntax.findall(inner, cst.SimpleStatementLine)
            }
            for line in syntax.findall(method.body, cst.SimpleStatementLine):
                if id(line) in nested or len(line.body) != 1:
                    continue
                assign = line.body[0]
                if (
                    isinstance(assign, cst.Assign)
                    and len(assign.targets) == 1
                    and isinstance(assign.targets[0].target, cst.Name)
                    and isinstance(assign.value, cst.Call)
                    and ctx.qualified_name(assign.value.func) in _VARIABLES
                ):
                    self._lines.add(id(line))

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if id(original) not in self._lines:
            return updated
        assign = original.body[0]
        assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name)
        name = assign.targets[0].target.value
        attribute = f"_{name}_variable"
        tf_name = ctx.tf_module()
        value = syntax.code(updated.body[0].value)
        made = cst.parse_statement(
            f"if not hasattr(self, {attribute!r}):\n"
            f"    with {tf_name}.init_scope():  # Keras 2 made it once, with the graph.\n"
            f"        self.{attribute} = {value}\n"
        )
        read = cst.parse_statement(f"{name} = self.{attribute}\n")
        ctx.change(
            original,
            RULE,
            f"`{name} = {syntax.code(assign.value)}` in call -> made once on the first call "
            f"and kept as `self.{attribute}`: Keras 2 ran call once to build its graph, "
            "Keras 3 traces it several times",
        )
        return cst.FlattenSentinel([made.with_changes(leading_lines=updated.leading_lines), read])
