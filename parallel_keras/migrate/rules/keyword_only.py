# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2 positional arguments Keras 3 made keyword-only or moved.

* `Model(inputs, outputs, "name")`: Keras 3's `Model` takes two positional
  arguments (TypeError on the third); the name goes by keyword.
* `Sequential(layers, "name")`: Keras 3's second parameter is `trainable`
  (ValueError on a string); the name goes by keyword.
* `model.compile(optimizer, loss, metrics, loss_weights, ...)`: Keras 3
  reads the third positional argument as `loss_weights`, so a metrics list
  would silently weight the losses; every argument after the loss goes by
  its Keras 2 keyword.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "keyword arguments"

# By Keras 3's names: `Context.qualified_name` names Keras 2's
# `keras.engine.training.Model` so.
_MODELS = frozenset({"keras.Model", "keras.models.Model", "keras.src.models.Model"})
_SEQUENTIALS = frozenset({"keras.Sequential", "keras.models.Sequential"})
# Keras 2 signatures (keras 2.2.4-2.3.1, engine/network.py, sequential.py,
# engine/training.py), in positional order.
_MODEL_SIGNATURE: tuple[str, ...] = ("inputs", "outputs", "name")
_SEQUENTIAL_SIGNATURE: tuple[str, ...] = ("layers", "name")
_COMPILE_SIGNATURE: tuple[str, ...] = (
    "optimizer",
    "loss",
    "metrics",
    "loss_weights",
    "sample_weight_mode",
    "weighted_metrics",
    "target_tensors",
)

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "keras.Model(inputs, outputs, name)",
        "keras.Model(inputs, outputs, name=name)",
        "Keras 3's Model takes two positional arguments",
    ),
    (
        "keras.Sequential(layers, name)",
        "keras.Sequential(layers, name=name)",
        "Keras 3's second positional parameter is trainable",
    ),
    (
        "model.compile(optimizer, loss, metrics, loss_weights, ...)",
        "model.compile(optimizer, loss, metrics=metrics, loss_weights=loss_weights, ...)",
        "Keras 3 reads the third positional argument as loss_weights",
    ),
]


class KeywordOnlyRule(context.Rule):
    """Keras 2 positional arguments that Keras 3 reads differently, by keyword."""

    name = RULE

    def __init__(self):
        # Names bound to modules other than Keras (`re.compile(...)`).
        self._modules: set[str] = set()

    def visit_Import(self, ctx, node):
        for alias in node.names:
            self._modules.add(alias.evaluated_alias or syntax.dotted(alias.name).split(".")[0])

    def leave_Call(self, ctx, original, updated):
        positional = syntax.positional(original)
        qualified = ctx.qualified_name(original.func)
        if qualified in _MODELS:
            signature, keep = _MODEL_SIGNATURE, 2
            what = "Keras 3's Model takes two positional arguments (TypeError on a third)"
        elif qualified in _SEQUENTIALS:
            signature, keep = _SEQUENTIAL_SIGNATURE, 1
            what = "Keras 3's Sequential reads a second positional argument as `trainable`"
        elif syntax.method_name(original) == "compile" and not self._module_function(original):
            signature, keep = _COMPILE_SIGNATURE, 2
            what = (
                "Keras 3's compile reads a third positional argument as `loss_weights`, "
                "not `metrics`"
            )
        else:
            return updated
        if len(positional) <= keep or syntax.has_star(original):
            return updated
        args = list(updated.args)
        index = 0
        named = []
        for position, arg in enumerate(args):
            if arg.keyword is not None:
                continue
            if index >= keep and index < len(signature):
                args[position] = arg.with_changes(
                    keyword=cst.Name(signature[index]),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
                named.append(signature[index])
            index += 1
        if not named:
            return updated
        ctx.change(
            original,
            RULE,
            f"passed {', '.join(f'`{name}=`' for name in named)} by keyword: {what}",
        )
        return updated.with_changes(args=args)

    def _module_function(self, call: cst.Call) -> bool:
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in self._modules
        )
