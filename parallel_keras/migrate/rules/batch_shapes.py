# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2's `batch_input_shape=` on a model's first layer.

Keras 2 let any first layer of a `Sequential` model fix the batch
(`Embedding(v, 8, batch_input_shape=(32, 10))`, or `batch_size=32` beside
`input_shape=(10,)`), the usual set-up of stateful RNNs. Keras 3 layers take
only `input_shape`/`input_dim` (and warn), so the keyword raises
"Unrecognized keyword arguments". The Keras 3 form is a `keras.Input(
batch_shape=...)` first in the model:

* `model.add(Layer(..., batch_input_shape=S))` -> `model.add(keras.Input(
  batch_shape=S))` then `model.add(Layer(...))`;
* `Sequential([Layer(..., batch_input_shape=S), ...])` -> `Sequential([
  keras.Input(batch_shape=S), Layer(...), ...])`;
* anywhere else (a layer built apart, a functional call) the keyword is
  flagged with the same fix.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "Keras 1/2 spellings"
_SEQUENTIAL = frozenset({"keras.Sequential", "keras.models.Sequential"})
_ACTION = (
    "Keras 3 layers take no batch_input_shape/batch_size: put keras.Input(batch_shape="
    "(batch, ...)) first in the model (model.add(keras.Input(batch_shape=...)) or the "
    "first item of Sequential([...])) and drop the keyword."
)


def _batch_shape(call: cst.Call) -> tuple[cst.BaseExpression, list[cst.Arg]] | None:
    """The batch shape a layer call fixes, and the keywords that gave it."""
    given = syntax.keyword(call, "batch_input_shape")
    if given is not None:
        return given.value, [given]
    batch, shape = syntax.keyword(call, "batch_size"), syntax.keyword(call, "input_shape")
    if batch is None or shape is None:
        return None
    if isinstance(shape.value, cst.Tuple):  # `(32,) + (10, 3)` spelled out
        items = [syntax.code(element.value) for element in shape.value.elements]
    else:
        items = [f"*{syntax.code(shape.value)}"]
    elements = [syntax.code(batch.value), *items]
    trailing = "," if len(elements) == 1 else ""
    return syntax.expression(f"({', '.join(elements)}{trailing})"), [batch, shape]


def _added_layer(line: cst.SimpleStatementLine) -> cst.Call | None:
    """`L` in a `model.add(L(...))` line."""
    if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    outer = line.body[0].value
    if (
        isinstance(outer, cst.Call)
        and syntax.method_name(outer) == "add"
        and len(outer.args) == 1
        and outer.args[0].keyword is None
        and isinstance(outer.args[0].value, cst.Call)
    ):
        return outer.args[0].value
    return None


def _first_listed(call: cst.Call) -> cst.Call | None:
    """The first item of `Sequential([L(...), ...])`, when a call."""
    if call.args and isinstance(call.args[0].value, cst.List) and call.args[0].value.elements:
        first = call.args[0].value.elements[0].value
        return first if isinstance(first, cst.Call) else None
    return None


def _input(ctx, shape: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=syntax.expression(f"{ctx.keras_module()}.Input"),
        args=[syntax.make_arg("batch_shape", shape)],
    )


class BatchInputShapeRule(context.Rule):
    """`model.add(LSTM(8, batch_input_shape=S))` -> `model.add(keras.Input(batch_shape=S))` first."""

    name = RULE

    def __init__(self):
        self._handled: set[int] = set()  # ids of the layer calls rewritten below
        self._later: set[int] = set()  # ids of layers added after a first one
        self._started: set[str] = set()  # models that got their first layer

    # -- Scan -----------------------------------------------------------------

    def visit_Assign(self, ctx, node):
        # `model = Sequential()`: its next `add` is a first layer again.
        for target in node.targets:
            self._started.discard(syntax.code(target.target))

    def visit_SimpleStatementLine(self, ctx, node):
        layer = _added_layer(node)
        if layer is not None:
            self._handled.add(id(layer))
            receiver = syntax.code(node.body[0].value.func.value)
            if receiver in self._started:
                self._later.add(id(layer))
            self._started.add(receiver)

    def visit_Call(self, ctx, node):
        first = _first_listed(node)
        if first is not None and ctx.qualified_name(node.func) in _SEQUENTIAL:
            self._handled.add(id(first))

    # -- Rewrite --------------------------------------------------------------

    def leave_SimpleStatementLine(self, ctx, original, updated):
        layer = _added_layer(updated)
        if layer is None:
            return updated
        outer = updated.body[0].value
        found = _batch_shape(layer)
        if found is None:
            return updated
        shape, keywords = found
        if id(original.body[0].value.args[0].value) in self._later:
            # Keras 2 read the batch shape of the first layer only.
            ctx.change(
                original,
                RULE,
                "dropped `batch_input_shape=` of a layer after the "
                "first (Keras 2 ignored it; Keras 3 rejects it)",
            )
            return updated.with_changes(
                body=[
                    cst.Expr(
                        outer.with_changes(
                            args=[
                                outer.args[0].with_changes(
                                    value=syntax.remove_args(layer, keywords)
                                )
                            ]
                        )
                    )
                ]
            )
        ctx.change(
            original,
            RULE,
            "`batch_input_shape=` on the first layer -> "
            "`add(keras.Input(batch_shape=...))` before it (Keras 3 layers "
            "take no batch shape)",
        )
        first = updated.with_changes(
            body=[
                cst.Expr(
                    outer.with_changes(args=[outer.args[0].with_changes(value=_input(ctx, shape))])
                )
            ]
        )
        second = cst.SimpleStatementLine(
            body=[
                cst.Expr(
                    outer.with_changes(
                        args=[outer.args[0].with_changes(value=syntax.remove_args(layer, keywords))]
                    )
                )
            ]
        )
        return cst.FlattenSentinel([first, second])

    def leave_Call(self, ctx, original, updated):
        if ctx.qualified_name(original.func) in _SEQUENTIAL:
            return self._sequential(ctx, original, updated)
        found = _batch_shape(updated)
        if found is not None and id(original) not in self._handled:
            # Not the first layer of a model this rule can see: a person
            # moves the shape to a keras.Input.
            ctx.flag(
                original,
                RULE,
                "`batch_input_shape=`/`batch_size=` on a layer (Keras 3 layers reject them)",
                _ACTION,
            )
        return updated

    def _sequential(self, ctx, original, updated):
        if not updated.args or not isinstance(updated.args[0].value, cst.List):
            return updated
        items = list(updated.args[0].value.elements)
        if not items or not isinstance(items[0].value, cst.Call):
            return updated
        found = _batch_shape(items[0].value)
        if found is None:
            return updated
        shape, keywords = found
        ctx.change(
            original,
            RULE,
            "`batch_input_shape=` on the first layer -> "
            "`keras.Input(batch_shape=...)` first in Sequential([...]) (Keras 3 "
            "layers take no batch shape)",
        )
        first = cst.Element(
            value=_input(ctx, shape), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        items[0] = items[0].with_changes(value=syntax.remove_args(items[0].value, keywords))
        listed = updated.args[0].value.with_changes(elements=[first, *items])
        return updated.with_changes(
            args=[updated.args[0].with_changes(value=listed), *updated.args[1:]]
        )


AUDIT = [
    (
        "<model>.add(<Layer>(..., batch_input_shape=S))",
        "<model>.add(keras.Input(batch_shape=S)); <model>.add(<Layer>(...))",
        "Keras 3 layers take no batch shape; the Input fixes it (stateful RNNs)",
    ),
    (
        "Sequential([<Layer>(..., batch_input_shape=S), ...])",
        "Sequential([keras.Input(batch_shape=S), <Layer>(...), ...])",
        "Keras 3 layers take no batch shape; the Input fixes it",
    ),
    (
        "<Layer>(..., batch_size=B, input_shape=S) as the first layer",
        "keras.Input(batch_shape=(B, *S))",
        "the same, from Keras 2's batch_size + input_shape pair",
    ),
    ("<Layer>(..., batch_input_shape=S) elsewhere", None, _ACTION),
]
