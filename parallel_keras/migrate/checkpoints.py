"""Rewrite: `ModelCheckpoint(period=N)` and checkpoint file suffixes.

Keras 3's `ModelCheckpoint` dropped `period` (its 7th positional parameter is
now `save_freq`, so a positional period is silently misread) and checks the
suffix of `filepath` when it is built. `parallel_keras.callbacks.ModelCheckpoint`
accepts the Keras 2 arguments; calls that use `period` move to it. Calls
to the seeds' `ParallelModelCheckpoint` (template first) get the same
suffix fix.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import engine
from parallel_keras.migrate import saving
from parallel_keras.migrate import syntax

RULE = "checkpoints"

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


def _filepath_index(ctx: engine.Context, call: cst.Call) -> int | None:
    """Position of `filepath` in a checkpoint constructor call, else None."""
    qualified = ctx.qualified_name(call.func) or ""
    if qualified == _KERAS_CHECKPOINT:
        return 0
    if qualified.split(".")[-1] == "ParallelModelCheckpoint":
        return 1
    return None


class CheckpointRule(engine.Rule):
    """Checkpoint callbacks that Keras 3 rejects or misreads."""

    name = RULE

    def visit_Call(self, ctx, node):
        index = _filepath_index(ctx, node)
        if index is None or syntax.has_star(node):
            return
        path = saving.path_argument(node, index)
        if path is None:
            return
        weights_only = saving.path_argument(node, index + 4, "save_weights_only")
        literal = saving.path_literal(ctx, path)
        if literal is None:
            ctx.shared.setdefault("unresolved_checkpoints", []).append(node)
            return
        text = syntax.string_text(literal)
        if syntax.is_literal_true(weights_only):
            saving.register_rename(
                ctx, literal, saving.weights_suffix(text),
                "a weights-only checkpoint writes only '.weights.h5' files",
            )
        elif weights_only is None or syntax.is_literal_false(weights_only):
            saving.register_rename(
                ctx, literal, saving.model_suffix(text, allow_hdf5=False),
                "a full-model checkpoint writes only '.keras' or '.h5' files",
            )

    def leave_Call(self, ctx, original, updated):
        if any(original is call for call in ctx.shared.get("unresolved_checkpoints", ())):
            ctx.flag(
                original,
                RULE,
                "checkpoint filepath is computed, so its suffix could not be checked",
                "make sure it ends with '.weights.h5' when save_weights_only=True, "
                "else with '.keras' or '.h5' (Keras 3 rejects other suffixes).",
            )
        if ctx.qualified_name(original.func) != _KERAS_CHECKPOINT:
            return updated
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
