# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 1 layer arguments that Keras 2 still accepted, Keras 3 rejects.

Keras 2 translated Keras 1 layer arguments through its legacy interfaces
(keras/legacy/interfaces.py, 2.0-2.3): `Convolution2D(32, 3, 3,
border_mode='same', subsample=(2, 2), init='he_normal')` was
`Conv2D(32, (3, 3), padding='same', strides=(2, 2),
kernel_initializer='he_normal')`. Keras 3 has no such translation (a
ValueError: "Unrecognized keyword arguments"), so the rewrite writes the
Keras 2 spelling, with the same meaning.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "Keras 1 layer arguments"

_COMMON = {
    "init": "kernel_initializer",
    "W_regularizer": "kernel_regularizer",
    "b_regularizer": "bias_regularizer",
    "W_constraint": "kernel_constraint",
    "b_constraint": "bias_constraint",
    "bias": "use_bias",
}
_CONV = {
    **_COMMON,
    "border_mode": "padding",
    "subsample": "strides",
    "subsample_length": "strides",
    "nb_filter": "filters",
    "filter_length": "kernel_size",
    "dim_ordering": "data_format",
}
_POOL = {
    "border_mode": "padding",
    "pool_length": "pool_size",
    "stride": "strides",
    "dim_ordering": "data_format",
}
_ORDERING = {"th": "'channels_first'", "tf": "'channels_last'", "default": "None"}
# Keras 3 class name -> (its keyword renames, number of Keras 1 kernel
# dimensions given as separate positional ints after the filters).
_LAYERS: dict[str, tuple[dict[str, str], int]] = {
    "Dense": ({**_COMMON, "output_dim": "units"}, 0),
    "Dropout": ({"p": "rate"}, 0),
    "Conv1D": (_CONV, 0),
    "Convolution1D": (_CONV, 0),
    "Conv2D": (_CONV, 2),
    "Convolution2D": (_CONV, 2),
    "Conv3D": (_CONV, 3),
    "Convolution3D": (_CONV, 3),
    "MaxPooling1D": (_POOL, 0),
    "AveragePooling1D": (_POOL, 0),
    "MaxPooling2D": (_POOL, 0),
    "AveragePooling2D": (_POOL, 0),
    "MaxPooling3D": (_POOL, 0),
    "AveragePooling3D": (_POOL, 0),
    "GlobalAveragePooling2D": ({"dim_ordering": "data_format"}, 0),
    "GlobalMaxPooling2D": ({"dim_ordering": "data_format"}, 0),
    "UpSampling2D": ({"dim_ordering": "data_format"}, 0),
    "ZeroPadding2D": ({"dim_ordering": "data_format"}, 0),
}

_WEIGHTS_WHY = (
    "Keras 2's layer argument of starting weights, set with set_weights once the layer "
    "is built; Keras 3 layers reject it"
)
_WEIGHTS_MODERN = "initializers, e.g. Dense(n, kernel_initializer=keras.initializers.Constant(W))"

AUDIT: list[tuple[str, ...]] = [
    *(
        (
            f"keras.layers.{layer}({old}=...)",
            f"keras.layers.{layer}({new}=...)",
            "Keras 1 argument Keras 2 translated; Keras 3 rejects it",
        )
        for layer, (renames, _) in sorted(_LAYERS.items())
        for old, new in sorted(renames.items())
    ),
    (
        "keras.layers.Convolution2D(filters, rows, cols)",
        "keras.layers.Convolution2D(filters, (rows, cols))",
        "Keras 1 kernel dimensions as separate ints; Keras 2 read them as kernel_size",
    ),
    (
        "keras.layers.Convolution3D(filters, d1, d2, d3)",
        "keras.layers.Convolution3D(filters, (d1, d2, d3))",
        "Keras 1 kernel dimensions as separate ints; Keras 2 read them as kernel_size",
    ),
    (
        "keras.layers.<Layer>(..., weights=w)",
        "parallel_keras.compat.initial_weights(keras.layers.<Layer>(...), w)",
        _WEIGHTS_WHY,
        _WEIGHTS_MODERN,
    ),
]


def _is_int(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer)
    )


class Keras1LayerArgsRule(context.Rule):
    """`Convolution2D(32, 3, 3, border_mode='same')` -> `...(32, (3, 3), padding='same')`."""

    name = RULE

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        module, _, layer = qualified.rpartition(".")
        if not module.startswith("keras.layers") or layer not in _LAYERS:
            return updated
        renames, dimensions = _LAYERS[layer]
        args = list(updated.args)
        done = []
        positional = [i for i, arg in enumerate(args) if arg.keyword is None and not arg.star]
        kernel = positional[1 : 1 + dimensions] if dimensions else []
        keras1_name = layer.startswith("Convolution")
        if (
            len(kernel) == dimensions
            and dimensions
            and len(positional) == 1 + dimensions
            and (keras1_name or all(_is_int(args[i].value) for i in kernel))
        ):
            values = ", ".join(syntax.code(args[i].value) for i in kernel)
            first = args[kernel[0]].with_changes(value=syntax.expression(f"({values})"))
            args = [arg for i, arg in enumerate(args) if i not in kernel[1:]]
            args[kernel[0]] = first.with_changes(comma=args[kernel[0]].comma)
            done.append(f"kernel dimensions -> `({values})`")
        for index, arg in enumerate(args):
            if arg.keyword is None or arg.keyword.value not in renames:
                continue
            old = arg.keyword.value
            new = renames[old]
            value = arg.value
            if old == "dim_ordering":
                text = syntax.string_value(value)
                if text not in _ORDERING:
                    continue
                value = syntax.expression(_ORDERING[text])
            args[index] = arg.with_changes(keyword=cst.Name(new), value=value)
            done.append(f"`{old}=` -> `{new}=`")
        if not done:
            return updated
        last = args[-1]
        if updated.args and last.comma != updated.args[-1].comma:
            args[-1] = last.with_changes(comma=updated.args[-1].comma)
        ctx.change(
            original,
            RULE,
            f"{layer}: {', '.join(done)} (Keras 1 arguments Keras 2 translated; Keras 3 "
            "rejects them)",
        )
        return updated.with_changes(args=args)


class InitialWeightsRule(context.Rule):
    """`Dense(6, weights=w)` -> `parallel_keras.compat.initial_weights(Dense(6), w)`.

    Keras 2's base Layer took `weights=` (the starting values, set once the
    layer is built); Keras 3 layers reject it. Any `keras.layers` class.
    """

    name = RULE

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        module, _, layer = qualified.rpartition(".")
        if not (module == "keras.layers" or module.startswith("keras.layers.")):
            return updated
        if not layer[:1].isupper():
            return updated
        index = next(
            (
                i
                for i, arg in enumerate(updated.args)
                if arg.keyword is not None and arg.keyword.value == "weights"
            ),
            None,
        )
        if index is None:
            return updated
        weights = updated.args[index].value
        args = [arg for i, arg in enumerate(updated.args) if i != index]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        layer_call = updated.with_changes(args=args)
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"{layer}(weights=...) -> `parallel_keras.compat.initial_weights({layer}(...), "
            f"{syntax.code(weights)})`: {_WEIGHTS_WHY}",
            _WEIGHTS_MODERN,
        )
        return cst.Call(
            func=syntax.expression("parallel_keras.compat.initial_weights"),
            args=[cst.Arg(layer_call), cst.Arg(weights)],
        )
