# SPDX-License-Identifier: Apache-2.0
"""Compatibility: callbacks that read Keras 2's `self.params`.

Keras 2's `fit` gave callbacks `params` with `batch_size`, `samples`,
`do_validation` and `metrics`; Keras 3 gives `verbose`, `epochs` and
`steps`, so `self.params['metrics']` raises KeyError. Two forms:

* a project's callback class deriving from `keras.callbacks.Callback` whose
  code reads `self.params` derives from `parallel_keras.compat.Keras2Callback`
  (Keras 3's `Callback` with Keras 2's params and batch logs);
* a library's callback written against Keras 2's params (keras_tqdm's
  `TQDMCallback`, `TQDMNotebookCallback`) is made where the script makes
  it, inside `parallel_keras.compat.keras2_callback(...)`.

Keras 2's `TensorBoard.set_model` also made `self.writer`, a FileWriter that
GAN scripts wrote their own losses to (`callback.set_model(model)`, then
`callback.writer.add_summary(summary, step)`); a `TensorBoard(...)` assigned
to a name the file calls `set_model` on or reads `writer` of becomes
`parallel_keras.compat.TensorBoard`, which makes that writer.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "callbacks"
_WRAPPER = "parallel_keras.compat.keras2_callback"
_BASE = "parallel_keras.compat.Keras2Callback"
_CALLBACK_BASES = frozenset({"keras.callbacks.Callback", "keras.callbacks.callbacks.Callback"})
# Library callbacks that read Keras 2's params['metrics'] / ['samples'].
LIBRARY_CALLBACKS = frozenset(
    {
        "keras_tqdm.TQDMCallback",
        "keras_tqdm.TQDMNotebookCallback",
        "keras_tqdm.tqdm_callback.TQDMCallback",
        "keras_tqdm.tqdm_notebook_callback.TQDMNotebookCallback",
    }
)
_TENSORBOARD = "parallel_keras.compat.TensorBoard"
_TENSORBOARDS = frozenset(
    {
        "keras.callbacks.TensorBoard",
        "keras.callbacks.tensorboard_v1.TensorBoard",
        "keras.callbacks.tensorboard_v2.TensorBoard",
    }
)
_MODERN = (
    "read the metrics from the logs dict and the batches from self.params['steps'], "
    "and derive from keras.callbacks.Callback"
)

_LIBRARY_MODERN = "tqdm's own tqdm.keras.TqdmCallback (Keras 3's params), or keras's ProgbarLogger"


def _reads_params(node: cst.ClassDef) -> bool:
    return any(
        isinstance(attribute.value, cst.Name)
        and attribute.value.value == "self"
        and attribute.attr.value == "params"
        for attribute in syntax.findall(node.body, cst.Attribute)
    )


class Keras2CallbackRule(context.Rule):
    """`class P(Callback): ... self.params['metrics']` -> `class P(parallel_keras.compat.Keras2Callback)`."""

    name = RULE

    def __init__(self):
        self._wrapped: set[int] = set()  # library calls already inside keras2_callback(...)
        self._writers: set[str] = set()  # names the file calls set_model on or reads writer of

    def visit_Attribute(self, ctx, node):
        if node.attr.value in ("set_model", "writer") and isinstance(
            node.value, (cst.Name, cst.Attribute)
        ):
            self._writers.add(syntax.dotted(node.value) or "")

    def leave_Assign(self, ctx, original, updated):
        value = updated.value
        if (
            len(original.targets) != 1
            or not isinstance(original.value, cst.Call)
            or not isinstance(value, cst.Call)
            or syntax.dotted(original.targets[0].target) not in self._writers
            or ctx.qualified_name(original.value.func) not in _TENSORBOARDS
        ):
            return updated
        ctx.require_import("parallel_keras.compat")
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(original.value.func)}(...)` -> `{_TENSORBOARD}(...)`: the script "
            "calls its set_model or reads its writer, Keras 2's FileWriter, which Keras 3's "
            "TensorBoard does not have",
            modern="tf.summary.create_file_writer(log_dir) and tf.summary.scalar",
        )
        return updated.with_changes(value=value.with_changes(func=syntax.expression(_TENSORBOARD)))

    def visit_Call(self, ctx, node):
        if ctx.qualified_name(node.func) == _WRAPPER and node.args:
            self._wrapped.add(id(node.args[0].value))

    def leave_ClassDef(self, ctx, original, updated):
        bases = [ctx.qualified_name(base.value) for base in original.bases]
        if not any(base in _CALLBACK_BASES for base in bases) or not _reads_params(original):
            return updated
        ctx.require_import("parallel_keras.compat")
        ctx.compat(
            original,
            RULE,
            f"`class {original.name.value}({', '.join(syntax.code(b.value) for b in original.bases)})` "
            f"-> `{_BASE}`: it reads self.params, which Keras 3's fit fills with verbose, "
            "epochs and steps only; Keras2Callback gives it Keras 2's batch_size, samples, "
            "do_validation and metrics",
            modern=_MODERN,
        )
        return updated.with_changes(
            bases=[
                base.with_changes(value=syntax.expression(_BASE))
                if name in _CALLBACK_BASES
                else base
                for base, name in zip(updated.bases, bases)
            ]
        )

    def leave_Call(self, ctx, original, updated):
        name = ctx.qualified_name(original.func)
        if name not in LIBRARY_CALLBACKS or id(original) in self._wrapped:
            return updated
        ctx.require_import("parallel_keras.compat")
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(original.func)}(...)` -> `{_WRAPPER}(...)`: it reads Keras 2's "
            "self.params['metrics'] (and 'samples'), which Keras 3's fit does not give",
            modern=_LIBRARY_MODERN,
        )
        return cst.Call(func=syntax.expression(_WRAPPER), args=[cst.Arg(updated)])


AUDIT = [
    (
        "keras.callbacks.TensorBoard(...) whose set_model the script calls or writer it reads",
        _TENSORBOARD,
        "Keras 2's set_model made self.writer, a FileWriter; Keras 3's has none",
        "tf.summary.create_file_writer(log_dir) and tf.summary.scalar",
    ),
    (
        "class X(keras.callbacks.Callback) reading self.params",
        _BASE,
        "Keras 3's fit gives callbacks verbose/epochs/steps only",
        _MODERN,
    ),
    *(
        (name, f"{_WRAPPER}({name}(...))", "reads Keras 2's params['metrics']", _LIBRARY_MODERN)
        for name in sorted(LIBRARY_CALLBACKS)
    ),
]
