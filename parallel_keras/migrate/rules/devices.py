# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `tf.device` scopes around layer calls -> `parallel_keras.device`.

In Keras 3 a functional model re-runs its layers at call time, outside the
`with tf.device(...)` blocks that surrounded them while it was built, so the
placement is silently lost. `parallel_keras.device` records the placement of
the layer calls made inside it. A scope is rewritten when its body calls a
layer on tensors (`shared_lstm(input_a)`, `Dense(8)(x)`,
`keras.layers.concatenate([...])`); a scope that only constructs a model
(`with tf.device('/cpu:0'): model = Xception()`, the template-on-CPU idiom
before `multi_gpu_model`) keeps `tf.device`, which still works for that.
`tf.device_scope` (in the Keras FAQ, never in TensorFlow) is always rewritten.
"""

from __future__ import annotations

import ast

import libcst as cst

from parallel_keras.migrate import context, syntax, towers

RULE = "device scopes"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "with tf.device(...): <layer calls>",
        "with parallel_keras.device(...):",
        "Keras 3 drops tf.device placement of layer calls when the model runs",
    ),
    (
        "with tf.device(...): <model construction only>",
        "with tf.device(...): (kept)",
        "placing where a model is built still works",
    ),
    (
        "with tf.device(...) inside the project's own multi-GPU code (a vendored "
        "multi_gpu_model, make_parallel, ParallelModel: towers over slices)",
        "(kept)",
        "its callers get parallel_keras.multi_gpu_model; the towers are not placements",
    ),
    ("tf.device_scope", "parallel_keras.device", "tf.device_scope never existed in TensorFlow"),
]

_DEVICE = "tensorflow.device"
_DEVICE_SCOPE = "tensorflow.device_scope"


def _is_layer_class(qualified: str | None) -> bool:
    if not qualified or not qualified.startswith("keras.layers."):
        return False
    return qualified.rsplit(".", 1)[-1][:1].isupper()


def _is_layer_function(qualified: str | None) -> bool:
    """`keras.layers.concatenate` and the other functional merge helpers."""
    if not qualified or not qualified.startswith("keras.layers."):
        return False
    return qualified.rsplit(".", 1)[-1][:1].islower()


class DeviceScopeRule(context.Rule):
    """`with tf.device('/gpu:0'): y = layer(x)` -> `with parallel_keras.device(...)`."""

    name = RULE

    def __init__(self):
        self._layer_names: set[str] = set()
        # Lines of `with tf.device` inside the project's own multi-GPU code
        # (a vendored multi_gpu_model, make_parallel, ParallelModel: see
        # towers.py): its towers are what parallel_keras.multi_gpu_model
        # replaces, not placements to keep.
        self._vendored: set[int] = set()

    def visit_Module(self, ctx, node):
        try:
            self._vendored = towers.tower_scopes(ast.parse(node.code))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self._vendored = set()

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call) and _is_layer_class(
            ctx.qualified_name(node.value.func)
        ):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._layer_names.add(target.target.value)

    def _calls_layer(self, ctx, body) -> bool:
        for call in syntax.findall(body, cst.Call):
            func = call.func
            if isinstance(func, cst.Call) and _is_layer_class(ctx.qualified_name(func.func)):
                return True
            if isinstance(func, cst.Name) and func.value in self._layer_names:
                return True
            if isinstance(func, (cst.Name, cst.Attribute)) and _is_layer_function(
                ctx.qualified_name(func)
            ):
                return True
        return False

    def leave_With(self, ctx, original, updated):
        if ctx.line(original) in self._vendored:
            return updated
        items = list(updated.items)
        changed = False
        for index, (old_item, item) in enumerate(zip(original.items, updated.items)):
            if not isinstance(old_item.item, cst.Call):
                continue
            qualified = ctx.qualified_name(old_item.item.func)
            if qualified == _DEVICE_SCOPE:
                reason = "tf.device_scope never existed in TensorFlow"
            elif qualified == _DEVICE and self._calls_layer(ctx, original.body):
                reason = (
                    "Keras 3 drops tf.device placement of layer calls when the "
                    "model runs; parallel_keras.device keeps it"
                )
            else:
                continue
            ctx.require_import("parallel_keras")
            items[index] = item.with_changes(
                item=item.item.with_changes(func=syntax.expression("parallel_keras.device"))
            )
            ctx.change(
                old_item,
                RULE,
                f"`{syntax.dotted(old_item.item.func)}(...)` -> "
                f"`parallel_keras.device(...)`: {reason}",
            )
            changed = True
        return updated.with_changes(items=items) if changed else updated
