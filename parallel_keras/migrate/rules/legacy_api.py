# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 1/2 spellings that Keras 3 rejects.

* `Model(input=x, output=y)` -> `Model(inputs=x, outputs=y)`;
* `nb_epoch=` -> `epochs=` in `fit` and `fit_generator`;
* `samples_per_epoch=` / `nb_val_samples=` (Keras 1 `fit_generator`, in
  samples) are dropped when the data is an `ImageDataGenerator` iterator or
  a `Sequence`, which know their length; otherwise flagged, since the batch
  size that converts samples to steps is not in the call;
* `K.image_dim_ordering()` / `K.set_image_dim_ordering(...)` ->
  `image_data_format` with the value mapped ('th' <-> 'channels_first').
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "Keras 1/2 spellings"

_MODEL_CLASSES = frozenset({"keras.Model", "keras.models.Model"})
_FIT_METHODS = frozenset({"fit", "fit_generator"})
_ITERATOR_METHODS = frozenset({"flow", "flow_from_directory", "flow_from_dataframe"})
_ORDERING = {"th": "channels_first", "tf": "channels_last"}


def _rename_keyword(call: cst.Call, old: str, new: str) -> cst.Call:
    return call.with_changes(
        args=[
            arg.with_changes(keyword=cst.Name(new))
            if arg.keyword is not None and arg.keyword.value == old
            else arg
            for arg in call.args
        ]
    )


class LegacyApiRule(context.Rule):
    """`Model(input=, output=)`, `nb_epoch=`, `samples_per_epoch=`, dim ordering."""

    name = RULE

    def __init__(self):
        self._iterators: set[str] = set()  # names bound to self-sizing data

    def visit_Assign(self, ctx, node):
        value = node.value
        if isinstance(value, cst.Call) and self._sized(ctx, value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._iterators.add(target.target.value)

    def visit_ClassDef(self, ctx, node):
        for base in node.bases:
            if (ctx.qualified_name(base.value) or "").split(".")[-1] in ("Sequence", "PyDataset"):
                self._iterators.add(f"class:{node.name.value}")

    def _sized(self, ctx, call: cst.Call) -> bool:
        """Whether `call` makes data that knows its length (an iterator, a Sequence)."""
        if syntax.method_name(call) in _ITERATOR_METHODS:
            return True
        if isinstance(call.func, cst.Name) and f"class:{call.func.value}" in self._iterators:
            return True
        return False

    def _is_sized(self, ctx, value) -> bool:
        if isinstance(value, cst.Name):
            return value.value in self._iterators
        return isinstance(value, cst.Call) and self._sized(ctx, value)

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        if qualified in _MODEL_CLASSES:
            return self._model(ctx, original, updated)
        if qualified == "keras.backend.image_dim_ordering":
            ctx.change(
                original,
                RULE,
                "`image_dim_ordering()` -> `image_data_format()` "
                "mapped back to 'th'/'tf' (Keras 3 removed dim ordering)",
            )
            owner = (
                syntax.dotted(original.func.value)
                if isinstance(original.func, cst.Attribute)
                else None
            )
            function = f"{owner}.image_data_format" if owner else "keras.backend.image_data_format"
            if owner is None:
                ctx.require_import("keras")
            return syntax.expression(f"('th' if {function}() == 'channels_first' else 'tf')")
        if qualified == "keras.backend.set_image_dim_ordering" and len(updated.args) == 1:
            return self._set_ordering(ctx, original, updated)
        if syntax.method_name(updated) in _FIT_METHODS:
            return self._fit(ctx, original, updated)
        if qualified == "keras.layers.Embedding" and syntax.keyword(updated, "input_length"):
            return self._embedding(ctx, original, updated)
        return updated

    def _embedding(self, ctx, original, updated):
        length = syntax.keyword(updated, "input_length")
        if length is None or syntax.keyword(updated, "input_shape") is not None:
            return updated
        value = syntax.code(length.value)
        ctx.change(
            original,
            RULE,
            f"Embedding `input_length={value}` -> `input_shape=({value},)`: "
            "Keras 3 ignores input_length, so the model would not be built",
        )
        return updated.with_changes(
            args=[
                arg.with_changes(
                    keyword=cst.Name("input_shape"), value=syntax.expression(f"({value},)")
                )
                if arg is length
                else arg
                for arg in updated.args
            ]
        )

    def _model(self, ctx, original, updated):
        renamed = []
        for old, new in (("input", "inputs"), ("output", "outputs")):
            if syntax.keyword(updated, old) is not None:
                updated = _rename_keyword(updated, old, new)
                renamed.append(f"{old}= -> {new}=")
        if renamed:
            ctx.change(
                original, RULE, f"Model({', '.join(renamed)}) (Keras 1 names, rejected by Keras 3)"
            )
        return updated

    def _set_ordering(self, ctx, original, updated):
        value = updated.args[0].value
        if isinstance(value, cst.SimpleString) and value.evaluated_value in _ORDERING:
            new_value = syntax.expression(repr(_ORDERING[value.evaluated_value]))
        else:
            new_value = syntax.expression(
                f"{{'th': 'channels_first', 'tf': 'channels_last'}}[{syntax.code(value)}]"
            )
        func = updated.func
        if isinstance(func, cst.Attribute):
            func = func.with_changes(attr=cst.Name("set_image_data_format"))
        else:
            ctx.require_import("keras")
            func = syntax.expression("keras.backend.set_image_data_format")
        ctx.change(
            original,
            RULE,
            "`set_image_dim_ordering` -> `set_image_data_format` "
            "('th' = 'channels_first', 'tf' = 'channels_last')",
        )
        return updated.with_changes(func=func, args=[updated.args[0].with_changes(value=new_value)])

    def _fit(self, ctx, original, updated):
        if syntax.keyword(updated, "nb_epoch") is not None:
            updated = _rename_keyword(updated, "nb_epoch", "epochs")
            ctx.change(original, RULE, "`nb_epoch=` -> `epochs=` (Keras 1 name)")
        data = syntax.keyword(updated, "generator") or syntax.keyword(updated, "x")
        positional = syntax.positional(updated)
        data_value = (
            data.value if data is not None else (positional[0].value if positional else None)
        )
        validation = syntax.keyword(updated, "validation_data")
        for samples, steps, source in (
            ("samples_per_epoch", "steps_per_epoch", data_value),
            ("nb_val_samples", "validation_steps", validation.value if validation else None),
        ):
            arg = syntax.keyword(updated, samples)
            if arg is None:
                continue
            if source is not None and self._is_sized(ctx, source):
                updated = syntax.remove_args(updated, [arg])
                ctx.change(
                    original,
                    RULE,
                    f"removed `{samples}=` (Keras 1, in samples): "
                    "the iterator knows its number of batches",
                )
            else:
                ctx.flag(
                    original,
                    RULE,
                    f"`{samples}=` counts samples (Keras 1); Keras 3 counts batches in `{steps}=`",
                    f"replace {samples}=N by {steps}=N // batch_size (the batch "
                    "size of the generator).",
                )
        return updated


AUDIT = [
    ("Model(input=, output=)", "Model(inputs=, outputs=)", "Keras 1 names, rejected by Keras 3"),
    ("fit/fit_generator(nb_epoch=)", "epochs=", "Keras 1 name"),
    (
        "samples_per_epoch= / nb_val_samples= on an iterator or Sequence",
        "(removed)",
        "the iterator knows its number of batches",
    ),
    (
        "samples_per_epoch= / nb_val_samples= on a plain generator",
        None,
        "replace by steps_per_epoch=N // batch_size",
    ),
    (
        "keras.backend.image_dim_ordering()",
        "'th'/'tf' from image_data_format()",
        "Keras 3 removed dim ordering",
    ),
    (
        "keras.backend.set_image_dim_ordering(x)",
        "keras.backend.set_image_data_format(...)",
        "'th' = channels_first, 'tf' = channels_last",
    ),
    ("Embedding(input_length=n)", "Embedding(input_shape=(n,))", "Keras 3 ignores input_length"),
]
