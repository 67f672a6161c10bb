# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `ModelCheckpoint(period=N)` and checkpoint file suffixes.

Keras 3's `ModelCheckpoint` dropped `period` (its 7th positional parameter is
now `save_freq`, so a positional period is silently misread) and checks the
suffix of `filepath` when it is built. A literal path gets the suffix Keras 3
needs; a path computed at run time moves to
`parallel_keras.callbacks.ModelCheckpoint`, which appends it when needed. `parallel_keras.callbacks.ModelCheckpoint`
accepts the Keras 2 arguments; calls that use `period` move to it. Calls
to the legacy tutorials' `ParallelModelCheckpoint` (template first) get the same
suffix fix.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import saving

RULE = "checkpoints"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "ModelCheckpoint(..., period=N)",
        "parallel_keras.callbacks.ModelCheckpoint(..., period=N)",
        "Keras 3's ModelCheckpoint has no period (its 7th parameter is save_freq)",
    ),
    (
        "ModelCheckpoint('w.hdf5', save_weights_only=True)",
        "ModelCheckpoint('w.weights.h5', ...)",
        "Keras 3 checks the suffix when the callback is built",
    ),
    (
        "ModelCheckpoint(<path computed at run time>)",
        "parallel_keras.callbacks.ModelCheckpoint",
        "it appends the suffix Keras 3 needs when the path lacks it",
    ),
    (
        "<own checkpoint class>('w.hdf5', save_weights_only=True)",
        "'w.weights.h5'",
        "the class saves with save_weights, which Keras 3 writes only to .weights.h5",
    ),
    (
        "EarlyStopping/ReduceLROnPlateau/ModelCheckpoint(monitor=<not loss>, mode='auto')",
        "mode='max' or 'min', as Keras 2 chose",
        "Keras 3 raises for a metric without a direction",
    ),
]

_KERAS_CHECKPOINT = "keras.callbacks.ModelCheckpoint"
# Keras 2 ModelCheckpoint(filepath, monitor, verbose, save_best_only,
# save_weights_only, mode, period).
_LEGACY_SIGNATURE = (
    "filepath",
    "monitor",
    "verbose",
    "save_best_only",
    "save_weights_only",
    "mode",
    "period",
)


def _filepath_index(ctx: context.Context, call: cst.Call) -> int | None:
    """Position of `filepath` in a checkpoint constructor call, else None."""
    qualified = ctx.qualified_name(call.func) or ""
    if qualified == _KERAS_CHECKPOINT:
        return 0
    if qualified.split(".")[-1] == "ParallelModelCheckpoint":
        return 1
    return None


class CheckpointRule(context.Rule):
    """Checkpoint callbacks that Keras 3 rejects or misreads."""

    name = RULE
    writes = {"renamed_paths": context.Phase.SCAN, "first_save_line": context.Phase.SCAN}

    def __init__(self):
        # Keras checkpoints whose path is computed at run time.
        self._unresolved: list[cst.Call] = []

    def visit_Call(self, ctx, node):
        index = _filepath_index(ctx, node)
        if index is None:
            return self._own_checkpoint_class(ctx, node)
        if syntax.has_star(node):
            return
        path = saving.path_argument(node, index)
        if path is None:
            return
        weights_only = saving.path_argument(node, index + 4, "save_weights_only")
        literal = saving.path_literal(ctx, path)
        if literal is None:
            self._unresolved.append(node)
            return
        text = syntax.string_text(literal)
        if isinstance(literal, cst.SimpleString):
            ctx.facts.first_save_line.setdefault(text, ctx.line(node))
        if syntax.is_literal_true(weights_only):
            saving.register_rename(
                ctx,
                literal,
                saving.weights_suffix(text),
                "a weights-only checkpoint writes only '.weights.h5' files",
            )
        elif weights_only is None or syntax.is_literal_false(weights_only):
            saving.register_rename(
                ctx,
                literal,
                saving.model_suffix(text, allow_hdf5=False),
                "a full-model checkpoint writes only '.keras' or '.h5' files",
            )

    def _own_checkpoint_class(self, ctx, node):
        """A call of the project's own ModelCheckpoint copy saving weights only."""
        classes = ctx.project.checkpoint_classes if ctx.project is not None else {}
        name = (syntax.dotted(node.func) or "").split(".")[-1]
        if name not in classes or syntax.has_star(node):
            return
        path_index, weights_index = classes[name]
        if weights_index is None:
            return
        weights_only = saving.path_argument(node, weights_index, "save_weights_only")
        literal = saving.path_literal(ctx, saving.path_argument(node, path_index))
        if literal is None or not syntax.is_literal_true(weights_only):
            return
        saving.register_rename(
            ctx,
            literal,
            saving.weights_suffix(syntax.string_text(literal)),
            f"{name} saves these weights with save_weights, which writes only "
            "'.weights.h5' files in Keras 3",
        )

    def leave_Call(self, ctx, original, updated):
        computed = any(original is call for call in self._unresolved)
        if ctx.qualified_name(original.func) != _KERAS_CHECKPOINT:
            return updated
        if computed:
            # parallel_keras's checkpoint takes any suffix Keras 2 took and
            # writes what Keras 3 needs, so a run-time path needs no check.
            updated, named = syntax.keywordize(updated, _LEGACY_SIGNATURE)
            ctx.require_import("parallel_keras.callbacks")
            ctx.change(
                original,
                RULE,
                f"`{syntax.dotted(original.func)}(<path computed at run time>)` -> "
                "`parallel_keras.callbacks.ModelCheckpoint`: it accepts any suffix "
                "Keras 2 accepted and writes the format Keras 3 needs",
            )
            return updated.with_changes(
                func=syntax.expression("parallel_keras.callbacks.ModelCheckpoint")
            )
        positional = syntax.positional(updated)
        if syntax.keyword(updated, "period") is None and len(positional) < 7:
            return updated
        updated, named = syntax.keywordize(updated, _LEGACY_SIGNATURE)
        ctx.require_import("parallel_keras.callbacks")
        message = (
            f"`{syntax.dotted(original.func)}(..., period=...)` -> "
            "`parallel_keras.callbacks.ModelCheckpoint`: Keras 3's "
            "ModelCheckpoint has no `period`"
        )
        if named:
            message += f"; passed {', '.join(named)} by keyword (Keras 3 reordered them)"
        ctx.change(original, RULE, message)
        return updated.with_changes(
            func=syntax.expression("parallel_keras.callbacks.ModelCheckpoint")
        )


_MONITOR_CALLBACKS = {
    # Callback -> how many leading positional arguments come before the
    # keywords this rule reads (filepath, or model and filepath).
    "keras.callbacks.EarlyStopping": 0,
    "keras.callbacks.ReduceLROnPlateau": 0,
    "keras.callbacks.ModelCheckpoint": 1,
    "parallel_keras.callbacks.ModelCheckpoint": 1,
    "ParallelModelCheckpoint": 2,
}


def _keras2_mode(monitor: str) -> str:
    """Keras 2's `mode='auto'`: maximize anything with 'acc' in its name."""
    return "max" if "acc" in monitor or monitor.startswith("fmeasure") else "min"


class MonitorModeRule(context.Rule):
    """`EarlyStopping(monitor='val_acc')` -> `EarlyStopping(monitor='val_acc', mode='max')`.

    Keras 2's `mode='auto'` decided from the name ('acc' -> maximize, else
    minimize). Keras 3 asks the compiled metric for a direction and raises
    when it has none (e.g. `metrics=[keras.metrics.categorical_accuracy]`),
    so the mode Keras 2 used is written out.
    """

    name = "callback modes"

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        key = qualified if qualified in _MONITOR_CALLBACKS else qualified.split(".")[-1]
        leading = _MONITOR_CALLBACKS.get(key)
        if leading is None or syntax.has_star(updated):
            return updated
        if len(syntax.positional(updated)) > leading:
            return updated
        monitor = syntax.keyword(updated, "monitor")
        if monitor is None or not isinstance(monitor.value, cst.SimpleString):
            return updated
        metric = str(monitor.value.evaluated_value)
        if metric.removeprefix("val_") == "loss":
            return updated
        mode = syntax.keyword(updated, "mode")
        if mode is not None and not (
            isinstance(mode.value, cst.SimpleString) and mode.value.evaluated_value == "auto"
        ):
            return updated
        chosen = _keras2_mode(metric)
        new_value = syntax.expression(f"'{chosen}'")
        if mode is not None:
            args = [
                arg.with_changes(value=new_value) if arg is mode else arg for arg in updated.args
            ]
        else:
            args = list(updated.args)
            index = args.index(monitor)
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            new_arg = syntax.make_arg("mode", new_value).with_changes(comma=monitor.comma)
            args[index] = monitor.with_changes(comma=comma)
            args.insert(index + 1, new_arg)
        ctx.change(
            original,
            self.name,
            f"mode='{chosen}' for monitor='{metric}': what Keras 2's mode='auto' "
            "chose; Keras 3 raises when the metric has no direction",
        )
        return updated.with_changes(args=args)
