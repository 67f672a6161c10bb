# SPDX-License-Identifier: Apache-2.0
"""Rewrite: the template reached through the parallel model -> `.template`.

Keras 2's `multi_gpu_model` returned a model whose layers were the inputs,
the template (one layer, named like `model_1`), then one merge layer per
output, so scripts fetched the template as `parallel_model.layers[-2]` (one
output; `layers[-(n_outputs + 1)]` in general) or
`parallel_model.get_layer('model_1')`, mostly to save it. parallel_keras's
parallel model has no such layers and exposes the template as `.template`.
The rewrite applies where the variable is known to hold a `multi_gpu_model`
result; where it cannot be known, the access is flagged.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import multi_gpu

RULE = "template access"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "parallel_model.layers[-2] / .get_layer('model_1')",
        "parallel_model.template",
        "Keras 2 kept the template as a layer; parallel_keras exposes it",
    ),
    (
        "model.layers[-2] in a callback's set_model(self, model)",
        "model.template if hasattr(model, 'template') else model.layers[-2]",
        "fit hands callbacks the parallel model",
    ),
    (
        "self.model = ... in a callback's set_model",
        "self.template_model = ...",
        "Keras 3 callbacks do not let self.model be assigned",
    ),
    (
        "<unknown>.layers[-2] with a parallel-looking name",
        None,
        "use .template if it is a multi_gpu_model result",
    ),
]

_TEMPLATE_NAME = re.compile(r"^(model|sequential|functional)(_\d+)?$")
_PARALLEL_HINT = re.compile(r"parallel|multi|gpu|mgpu|replica", re.IGNORECASE)


def _negative_index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if (
        isinstance(value, cst.UnaryOperation)
        and isinstance(value.operator, cst.Minus)
        and isinstance(value.expression, cst.Integer)
    ):
        return -int(value.expression.value)
    return None


class TemplateAccessRule(context.Rule):
    """`parallel_model.layers[-2]` -> `parallel_model.template`."""

    name = RULE
    reads = {"multi_gpu_names": context.Phase.SCAN}

    def __init__(self):
        self._assigned: dict[str, bool] = {}  # dotted target -> holds a parallel model
        # `model.layers[-2]` in a callback's `set_model(self, model)`: the
        # model fit trains, which Keras 2 built with the template there.
        self._set_model_picks: set[int] = set()
        self._self_model: set[int] = set()
        self._self_model_classes: set[str] = set()

    def visit_ClassDef(self, ctx, node):
        # Keras 3's Callback.model cannot be assigned: a callback whose
        # set_model stores the template in self.model keeps it elsewhere.
        methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)]
        assigns = [
            assign
            for method in methods
            if method.name.value == "set_model"
            for assign in m.findall(
                method.body,
                m.Assign(
                    targets=[
                        m.AssignTarget(
                            target=m.Attribute(value=m.Name("self"), attr=m.Name("model"))
                        )
                    ]
                ),
            )
        ]
        if assigns:
            for method in methods:
                self._self_model.update(
                    id(node)
                    for node in m.findall(
                        method.body, m.Attribute(value=m.Name("self"), attr=m.Name("model"))
                    )
                )
            self._self_model_classes.add(node.name.value)

    def leave_Attribute(self, ctx, original, updated):
        if id(original) not in self._self_model:
            return updated
        return updated.with_changes(attr=cst.Name("template_model"))

    def leave_ClassDef(self, ctx, original, updated):
        if original.name.value in self._self_model_classes:
            ctx.change(
                original,
                RULE,
                f"class {original.name.value}: `self.model` -> `self.template_model`: "
                "its set_model stores another model there, and Keras 3 callbacks "
                "do not let `self.model` be assigned",
            )
        return updated

    def visit_FunctionDef(self, ctx, node):
        params = node.params.params
        if node.name.value != "set_model" or len(params) != 2:
            return
        model = params[1].name.value
        # Already rewritten (a second run): `model.template if hasattr(...) else ...`.
        done = {
            id(subscript)
            for choice in syntax.findall(
                node.body,
                cst.IfExp,
                m.IfExp(
                    test=m.Call(func=m.Name("hasattr")), body=m.Attribute(attr=m.Name("template"))
                ),
            )
            for subscript in syntax.findall(choice.orelse, cst.Subscript)
        }
        for subscript in syntax.findall(
            node.body,
            cst.Subscript,
            m.Subscript(value=m.Attribute(value=m.Name(model), attr=m.Name("layers"))),
        ):
            index = _negative_index(subscript)
            if index is not None and index <= -2 and id(subscript) not in done:
                self._set_model_picks.add(id(subscript))

    def _is_multi_gpu_call(self, ctx, value) -> bool:
        if not isinstance(value, cst.Call):
            return False
        qualified = ctx.qualified_name(value.func) or ""
        local = syntax.dotted(value.func) or ""
        return (
            qualified in multi_gpu.LEGACY_NAMES
            or qualified == "parallel_keras.multi_gpu_model"
            or local.split(".")[-1] == "multi_gpu_model"
            or local in ctx.facts.multi_gpu_names
        )

    def visit_Assign(self, ctx, node):
        parallel = self._is_multi_gpu_call(ctx, node.value)
        for target in node.targets:
            name = syntax.dotted(target.target)
            if name is not None:
                self._assigned[name] = self._assigned.get(name, True) and parallel

    def _known(self, node) -> bool | None:
        """True: holds a parallel model; False: may not; None: not a model name."""
        name = syntax.dotted(node)
        if name is None:
            return None
        if name in self._assigned:
            return self._assigned[name]
        return False if _PARALLEL_HINT.search(name) else None

    def leave_Subscript(self, ctx, original, updated):
        value = original.value
        if not (isinstance(value, cst.Attribute) and value.attr.value == "layers"):
            return updated
        index = _negative_index(original)
        if index is None or index > -2:
            return updated
        if id(original) in self._set_model_picks:
            owner = syntax.dotted(value.value)
            ctx.change(
                original,
                RULE,
                f"`{owner}.layers[{index}]` in set_model -> `{owner}.template` when "
                "fit trains a parallel model: Keras 2's multi_gpu_model kept the "
                "template at that layer; parallel_keras's has it as `.template`",
            )
            return syntax.expression(
                f"{owner}.template if hasattr({owner}, 'template') else {syntax.code(updated)}"
            )
        known = self._known(value.value)
        owner = syntax.dotted(value.value)
        if known:
            ctx.change(
                original,
                RULE,
                f"`{owner}.layers[{index}]` -> `{owner}.template`: Keras 2 kept the "
                f"template at layers[-(outputs + 1)]; parallel_keras exposes it directly",
            )
            return updated.value.with_changes(attr=cst.Name("template"))
        if known is False:
            self._flag(ctx, original, f"{owner}.layers[{index}]", owner)
        return updated

    def leave_Call(self, ctx, original, updated):
        if syntax.method_name(original) != "get_layer" or len(original.args) != 1:
            return updated
        value = original.args[0].value
        if not (
            isinstance(value, cst.SimpleString) and _TEMPLATE_NAME.match(str(value.evaluated_value))
        ):
            return updated
        owner_node = original.func.value
        known = self._known(owner_node)
        owner = syntax.dotted(owner_node)
        if known:
            ctx.change(
                original,
                RULE,
                f"`{owner}.get_layer({value.value})` -> `{owner}.template`: the "
                "parallel model has no template layer in Keras 3",
            )
            return cst.Attribute(value=updated.func.value, attr=cst.Name("template"))
        if known is False:
            self._flag(ctx, original, f"{owner}.get_layer({value.value})", owner)
        return updated

    def _flag(self, ctx, node, text, owner):
        ctx.flag(
            node,
            RULE,
            f"`{text}` reaches the template the Keras 2 way, but `{owner}` is not "
            "known to hold a multi_gpu_model result",
            f"if {owner} is a multi_gpu_model result, use `{owner}.template`; "
            "else keep a reference to the model you built.",
        )
