# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2 callback arguments that Keras 3 removed or ignores.

The Keras 2.3 signatures (keras/callbacks/callbacks.py, tensorboard_v1.py)
compared with Keras 3's (`inspect.signature` of `keras.callbacks.*`):

* `TensorBoard(batch_size=, write_grads=, embeddings_layer_names=,
  embeddings_data=)` are gone (TypeError); none changes the training, so
  they are dropped, saying what is no longer written;
* `ProgbarLogger(count_mode=, stateful_metrics=)` are gone (Keras 3 counts
  steps and knows its stateful metrics): dropped;
* `ReduceLROnPlateau(epsilon=)` (Keras 2.1's name of `min_delta`, which Keras
  2.3 still mapped) is swallowed by Keras 3's `**kwargs` and ignored, so the
  plateau test silently changes: renamed to `min_delta=`;
* `BaseLogger` no longer exists (Keras 3 averages the logs itself): flagged;
* `EarlyStopping(baseline=)` stops later in Keras 3 (an epoch that improves
  but does not beat the baseline no longer counts towards `patience`), and
  `restore_best_weights=` restores at the end of a run it did not stop: a
  call giving either moves to `parallel_keras.callbacks.EarlyStopping`,
  which keeps Keras 2's rules.

Keras 2 positional arguments are passed by keyword first (`TensorBoard(d,
0, 32)`: the third was `batch_size`, in Keras 3 it is `write_graph`).
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "callbacks"

# Keras 2.3 signatures, in order.
LEGACY_SIGNATURES = {
    "TensorBoard": (
        "log_dir",
        "histogram_freq",
        "batch_size",
        "write_graph",
        "write_grads",
        "write_images",
        "embeddings_freq",
        "embeddings_layer_names",
        "embeddings_metadata",
        "embeddings_data",
        "update_freq",
    ),
    "ProgbarLogger": ("count_mode", "stateful_metrics"),
    "ReduceLROnPlateau": (
        "monitor",
        "factor",
        "patience",
        "verbose",
        "mode",
        "min_delta",
        "cooldown",
        "min_lr",
    ),
}
# Callback -> removed argument -> why it can be dropped.
DROPPED = {
    "TensorBoard": {
        "batch_size": "only sized Keras 2's histogram batches",
        "write_grads": "Keras 3 writes no gradient histograms",
        "embeddings_layer_names": "Keras 3 writes every Embedding layer",
        "embeddings_data": "Keras 3 does not project embedding data",
    },
    "ProgbarLogger": {
        "count_mode": "Keras 3 counts steps",
        "stateful_metrics": "Keras 3 knows which metrics are stateful",
    },
}
RENAMED = {"ReduceLROnPlateau": {"epsilon": "min_delta"}}
# Keras 2.3 EarlyStopping(monitor, min_delta, patience, verbose, mode,
# baseline, restore_best_weights); Keras 3 keeps that order.
_EARLY_STOPPING = (
    "monitor",
    "min_delta",
    "patience",
    "verbose",
    "mode",
    "baseline",
    "restore_best_weights",
)
# Arguments whose meaning Keras 3 changed, and the value that means none.
_EARLY_STOPPING_CHANGED = {"baseline": "None", "restore_best_weights": "False"}
REMOVED_CLASSES = {
    "BaseLogger": "delete it: Keras 3 averages the epoch logs itself.",
}


def _callback(ctx: context.Context, func) -> str | None:
    qualified = ctx.qualified_name(func) or ""
    module, _, name = qualified.rpartition(".")
    if module in (
        "keras.callbacks",
        "keras.callbacks.callbacks",
        "keras.callbacks.tensorboard_v1",
        "keras.callbacks.tensorboard_v2",
    ):
        return name
    return None


class CallbackArgsRule(context.Rule):
    """`TensorBoard(log_dir, batch_size=32, write_grads=True)` -> `TensorBoard(log_dir)`."""

    name = RULE

    def leave_Call(self, ctx, original, updated):
        name = _callback(ctx, original.func)
        if name is None:
            return updated
        if name in REMOVED_CLASSES:
            ctx.flag(original, RULE, f"`{name}` does not exist in Keras 3", REMOVED_CLASSES[name])
            return updated
        if name == "EarlyStopping" and not syntax.has_star(updated):
            return _keras2_early_stopping(ctx, original, updated)
        if syntax.has_star(updated) or name not in LEGACY_SIGNATURES:
            return updated
        messages = []
        if len(syntax.positional(updated)) > 1:
            updated, named = syntax.keywordize(updated, LEGACY_SIGNATURES[name])
            messages.append(
                f"passed {', '.join(named)} by keyword (Keras 3 reordered the positional arguments)"
            )
        dropped = {
            keyword: arg
            for keyword in DROPPED.get(name, {})
            if (arg := syntax.keyword(updated, keyword)) is not None
        }
        if dropped:
            updated = syntax.remove_args(updated, list(dropped.values()))
            messages.append(
                "removed "
                + ", ".join(f"`{keyword}=` ({DROPPED[name][keyword]})" for keyword in dropped)
                + ": Keras 3 rejects it"
            )
        for old, new in RENAMED.get(name, {}).items():
            arg = syntax.keyword(updated, old)
            if arg is None:
                continue
            if syntax.keyword(updated, new) is not None:
                ctx.flag(
                    original,
                    RULE,
                    f"{name} gets both {old}= and {new}=",
                    f"remove {old}= (Keras 3 ignores it).",
                )
                continue
            updated = updated.with_changes(
                args=[
                    a.with_changes(keyword=syntax.expression(new)) if a is arg else a
                    for a in updated.args
                ]
            )
            messages.append(f"`{old}=` -> `{new}=` (Keras 3 silently ignores {old}=)")
        if messages:
            ctx.change(original, RULE, f"{name}: " + "; ".join(messages))
        return updated


def _keras2_early_stopping(ctx, original, updated):
    """`EarlyStopping(baseline=...)` -> `parallel_keras.callbacks.EarlyStopping(...)`."""
    called, _ = syntax.keywordize(updated, _EARLY_STOPPING, keep_first=False)
    given = [
        keyword
        for keyword, none in _EARLY_STOPPING_CHANGED.items()
        if (arg := syntax.keyword(called, keyword)) is not None
        and not (isinstance(arg.value, cst.Name) and arg.value.value == none)
    ]
    if not given:
        return updated
    ctx.require_import("parallel_keras.callbacks")
    ctx.compat(
        original,
        RULE,
        f"`{syntax.dotted(original.func)}({', '.join(f'{k}=' for k in given)}...)` -> "
        "`parallel_keras.callbacks.EarlyStopping`: Keras 3's stops later with a "
        "baseline and restores the best weights even when it did not stop",
        modern="keras.callbacks.EarlyStopping, after checking the epochs it trains",
    )
    return updated.with_changes(func=syntax.expression("parallel_keras.callbacks.EarlyStopping"))


AUDIT = [
    *(
        (f"keras.callbacks.{cls}({arg}=)", "(removed)", f"{why}; Keras 3 rejects the argument")
        for cls, args in sorted(DROPPED.items())
        for arg, why in sorted(args.items())
    ),
    *(
        (f"keras.callbacks.{cls}({old}=)", f"{new}=", "Keras 3 silently ignores the old name")
        for cls, names in sorted(RENAMED.items())
        for old, new in sorted(names.items())
    ),
    *((f"keras.callbacks.{cls}", None, fix) for cls, fix in sorted(REMOVED_CLASSES.items())),
    (
        "keras.callbacks.EarlyStopping(baseline= or restore_best_weights=)",
        "parallel_keras.callbacks.EarlyStopping",
        "Keras 3 stops later with a baseline and restores weights at every run's end",
    ),
]
