# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `metrics=['accuracy']` -> `metrics=['acc']` where the script reads 'acc'.

Keras 2.0-2.2 logged `metrics=['accuracy']` as 'acc' (and 'val_acc'), so a
script of that time reads those keys wherever logs appear: `monitor=`,
format fields of checkpoint paths (`'w-{val_acc:.4f}.h5'`), `logs['acc']`
in callbacks, `history.history['val_acc']` in plots. Keras 3 logs
`metrics=['accuracy']` as 'accuracy', and `metrics=['acc']` as 'acc' (the
same metric). Renaming every key the script reads would miss the ones built
at run time (`'val_' + name`) or read in another file; naming the metric
'acc' again, in the one place it is compiled, keeps every key the script
reads exactly as Keras 2 logged it. A script that reads both spellings is
flagged: no single name serves it.
"""

from __future__ import annotations

import re

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "metric names"

_OLD_KEYS = frozenset({"acc", "val_acc"})
_NEW_KEYS = frozenset({"accuracy", "val_accuracy"})
_FIELD = re.compile(r"\{((?:val_)?acc(?:uracy)?)[:!}]")

AUDIT: list[tuple[str, str | None, str]] = [
    (
        "compile(metrics=['accuracy']) with 'acc'/'val_acc' read as log keys",
        "compile(metrics=['acc'])",
        "Keras 2.0-2.2 logged 'accuracy' as 'acc'; Keras 3 logs metrics=['acc'] as "
        "'acc', so monitor=, path format fields, logs[...] and history keys stay right",
    ),
    (
        "'acc' and 'accuracy' log keys in one script",
        None,
        "no single metric name serves both: use one spelling throughout",
    ),
]


def _text(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        return str(node.evaluated_value)
    return None


class MetricKeyRule(context.Rule):
    """Names the compiled accuracy 'acc' when the script reads 'acc' keys."""

    name = RULE

    def __init__(self):
        self._compiled: list[cst.SimpleString] = []
        self._old_uses: list[cst.CSTNode] = []
        self._new_uses: list[cst.CSTNode] = []
        self._rename = False
        self._conflict: cst.CSTNode | None = None

    def _use(self, node: cst.CSTNode, key: str | None) -> None:
        if key in _OLD_KEYS:
            self._old_uses.append(node)
        elif key in _NEW_KEYS:
            self._new_uses.append(node)

    def visit_Call(self, ctx, node):
        if syntax.method_name(node) == "compile":
            metrics = syntax.keyword(node, "metrics")
            if metrics is not None and isinstance(metrics.value, (cst.List, cst.Tuple)):
                for element in metrics.value.elements:
                    value = element.value
                    if isinstance(value, cst.SimpleString) and _text(value) == "accuracy":
                        self._compiled.append(value)
        monitor = syntax.keyword(node, "monitor")
        if monitor is not None:
            self._use(monitor.value, _text(monitor.value))
        if syntax.method_name(node) == "get" and node.args:
            self._use(node, _text(node.args[0].value))

    def visit_Subscript(self, ctx, node):
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            self._use(node, _text(node.slice[0].slice.value))

    def visit_SimpleString(self, ctx, node):
        for key in _FIELD.findall(str(node.evaluated_value)):
            self._use(node, key)

    def finish_scan(self, ctx):
        # Keys read in the other files of the folder count too (callbacks
        # and plots often live beside the script that compiles).
        keys = ctx.project.log_keys if ctx.project is not None else set()
        reads_old = bool(self._old_uses) or bool(keys & _OLD_KEYS)
        reads_new = bool(self._new_uses) or bool(keys & _NEW_KEYS)
        if not self._compiled or not reads_old:
            return
        if reads_new:
            # Flagged in the rewrite pass, where the key is read or compiled.
            self._conflict = self._old_uses[0] if self._old_uses else self._compiled[0]
            return
        self._rename = True

    def _flag_conflict(self, ctx, original):
        if original is self._conflict:
            ctx.flag(
                original,
                RULE,
                "the script reads both 'acc' and 'accuracy' log keys of "
                "metrics=['accuracy'] (Keras 3 logs it as 'accuracy')",
                "use one spelling: 'accuracy' (and 'val_accuracy') everywhere with "
                "metrics=['accuracy'], or 'acc' everywhere with metrics=['acc'].",
            )

    def leave_Subscript(self, ctx, original, updated):
        self._flag_conflict(ctx, original)
        return updated

    def leave_Call(self, ctx, original, updated):
        self._flag_conflict(ctx, original)
        return updated

    def leave_SimpleString(self, ctx, original, updated):
        self._flag_conflict(ctx, original)
        if not self._rename or not any(original is node for node in self._compiled):
            return updated
        ctx.change(
            original,
            RULE,
            "metrics=['accuracy'] -> ['acc']: Keras 2 logged it as 'acc', and this "
            "script reads 'acc' keys (monitor=, path fields, logs, history); Keras 3 "
            "logs metrics=['acc'] as 'acc'",
        )
        return updated.with_changes(value=f"{updated.prefix}{updated.quote}acc{updated.quote}")
