# SPDX-License-Identifier: Apache-2.0
"""Rewrite: `ImageDataGenerator(...).flow_from_directory` -> a `tf.data` dataset.

Keras 3 removed `keras.preprocessing.image.ImageDataGenerator`. Its most
common use, reading class folders with at most a `rescale`, is exactly
`keras.utils.image_dataset_from_directory` with the generator's defaults
written out (nearest-neighbour resizing, `class_mode` as `label_mode`) and
the rescale mapped over the batches; `fit` reads the dataset whole each
epoch, as it read the iterator. Generators that augment (`rotation_range`,
`horizontal_flip`, `validation_split`, ...), `flow(x, y)` on arrays, and
iterators whose attributes are read (`.samples`, `.class_indices`) run
through `parallel_keras.compat.ImageDataGenerator`: Keras 2's own code from
the `tf_keras` package (the same augmentation draws), its iterators fed to
Keras 3's `fit`; the report gives the Keras 3 way as the modern form and the
pip command for `tf_keras`.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import requirements

RULE = "image generators"

_GENERATOR = "keras.preprocessing.image.ImageDataGenerator"
_LABEL_MODES = {"categorical": "categorical", "binary": "binary", "sparse": "int"}
# flow_from_directory keyword -> image_dataset_from_directory keyword.
_KEYWORDS = {
    "target_size": "image_size",
    "color_mode": "color_mode",
    "classes": "class_names",
    "batch_size": "batch_size",
    "shuffle": "shuffle",
    "seed": "seed",
    "interpolation": "interpolation",
    "follow_links": "follow_links",
}
_ITERATOR_ATTRIBUTES = frozenset(
    {"samples", "n", "class_indices", "classes", "filenames", "batch_size", "num_classes"}
)
_ACTION = (
    "Keras 3 has no ImageDataGenerator: read the folders with "
    "keras.utils.image_dataset_from_directory and augment with preprocessing "
    "layers (keras.layers.Rescaling, RandomFlip, RandomRotation, RandomZoom) "
    "in the model or in dataset.map."
)


_ACTION_ARRAYS = (
    "Keras 3 has no ImageDataGenerator: for arrays in memory, use "
    "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(batch_size) "
    "and map the augmentation as preprocessing layers (rescale -> "
    "keras.layers.Rescaling(scale), horizontal_flip -> RandomFlip('horizontal'), "
    "rotation_range=d -> RandomRotation(d / 360), width/height_shift_range -> "
    "RandomTranslation, zoom_range -> RandomZoom) with training=True; or pip install "
    "tf_keras and import ImageDataGenerator from tf_keras.preprocessing.image."
)
_COMPAT = "parallel_keras.compat.ImageDataGenerator"
KERAS2_EXTRA = requirements.KERAS2_EXTRA
_MODERN = _ACTION.split(": ", 1)[1]
_MODERN_ARRAYS = _ACTION_ARRAYS.split(": ", 1)[1].split("; or pip install")[0] + "."
_WHY = (
    "Keras 2's ImageDataGenerator from the tf_keras package (the same augmentation), "
    "its iterators fed to Keras 3's fit"
)
AUDIT = [
    (
        "ImageDataGenerator(rescale=...).flow_from_directory(...)",
        "keras.utils.image_dataset_from_directory(...).map(rescale)",
        "the generator's defaults written out (nearest resizing, label mode)",
    ),
    (
        "ImageDataGenerator(<augmentation>).flow_from_directory(...)",
        _COMPAT,
        _WHY,
        _MODERN,
    ),
    ("ImageDataGenerator(...).flow(x, y)", _COMPAT, _WHY, _MODERN_ARRAYS),
    (
        "ImageDataGenerator(...).flow_from_dataframe(...), iterator attributes "
        "(.samples, .class_indices)",
        _COMPAT,
        _WHY,
        _MODERN,
    ),
]


def _convertible(call: cst.Call) -> bool:
    """Whether `flow_from_directory(...)` has an `image_dataset_from_directory` twin."""
    if len(syntax.positional(call)) > 1:
        return False
    for arg in call.args:
        if arg.keyword is None:
            continue
        name = arg.keyword.value
        if name == "class_mode":
            value = arg.value
            if syntax.dotted(value) == "None":
                continue
            if not isinstance(value, cst.SimpleString):
                return False
            if syntax.string_value(value) not in _LABEL_MODES:
                return False
        elif name != "directory" and name not in _KEYWORDS:
            return False
    return True


class ImageDataRule(context.Rule):
    """`datagen.flow_from_directory(d, ...)` -> `keras.utils.image_dataset_from_directory(d, ...)`."""

    name = RULE

    def __init__(self):
        self._generators: dict[str, cst.BaseExpression | None] = {}  # name -> rescale
        self._complex: list[cst.Call] = []
        self._iterators: set[str] = set()
        self._attribute_uses: list[cst.Attribute] = []
        self._ok = True
        self._all_generators: set[str] = set()
        self._flows_arrays = False

    # -- Scan -----------------------------------------------------------------

    def visit_Assign(self, ctx, node):
        value = node.value
        if not isinstance(value, cst.Call):
            return
        target = node.targets[0].target if len(node.targets) == 1 else None
        if ctx.qualified_name(value.func) == _GENERATOR and isinstance(target, cst.Name):
            self._all_generators.add(target.value)
        if ctx.qualified_name(value.func) == _GENERATOR:
            rescale = syntax.keyword(value, "rescale")
            simple = not syntax.positional(value) and all(
                arg.keyword is not None and arg.keyword.value == "rescale" for arg in value.args
            )
            if isinstance(target, cst.Name) and simple:
                self._generators[target.value] = rescale.value if rescale else None
            else:
                self._complex.append(value)
        elif self._flow_call(value) and isinstance(target, cst.Name):
            self._iterators.add(target.value)

    def visit_Call(self, ctx, node):
        if syntax.method_name(node) == "flow" and (
            ctx.qualified_name(node.func.value) == _GENERATOR
            or (
                isinstance(node.func.value, cst.Name)
                and node.func.value.value in self._all_generators
            )
        ):
            self._flows_arrays = True
        if (
            syntax.method_name(node) in ("flow", "flow_from_dataframe")
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value in self._generators
        ):
            self._ok = False
        if self._flow_call(node) and not _convertible(node):
            # A class mode or option the dataset reader lacks: the whole
            # generator runs through parallel_keras.compat instead.
            self._ok = False

    def visit_Attribute(self, ctx, node):
        if (
            isinstance(node.value, cst.Name)
            and node.value.value in self._iterators
            and (node.attr.value in _ITERATOR_ATTRIBUTES)
        ):
            self._attribute_uses.append(node)

    def _flow_call(self, call) -> bool:
        return (
            syntax.method_name(call) == "flow_from_directory"
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value in self._generators
        )

    def finish_scan(self, ctx):
        self._ok = self._ok and not self._complex and not self._attribute_uses

    # -- Rewrite --------------------------------------------------------------

    def leave_ImportFrom(self, ctx, original, updated):
        if not self._ok or not self._generators or isinstance(updated.names, cst.ImportStar):
            return updated
        if syntax.canonical_name(syntax.dotted(updated.module)) != "keras.preprocessing.image":
            return updated
        kept = [a for a in updated.names if syntax.dotted(a.name) != "ImageDataGenerator"]
        if len(kept) == len(updated.names):
            return updated
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(names=kept)

    def _compat_import(self, ctx, original, updated):
        """`from keras.preprocessing.image import ImageDataGenerator` -> from parallel_keras.compat."""
        statement = updated.body[0]
        if (
            # Every generator became a dataset: the import goes (leave_ImportFrom).
            (self._ok and self._generators)
            or not isinstance(statement, cst.ImportFrom)
            or statement.module is None
            or isinstance(statement.names, cst.ImportStar)
            or syntax.canonical_name(syntax.dotted(statement.module)) != "keras.preprocessing.image"
        ):
            return None
        moved = [a for a in statement.names if syntax.dotted(a.name) == "ImageDataGenerator"]
        if not moved:
            return None
        kept = [a for a in statement.names if a not in moved]
        ctx.require_package(KERAS2_EXTRA)
        ctx.compat(
            original,
            RULE,
            "`ImageDataGenerator` imported from parallel_keras.compat: " + _WHY,
            _MODERN_ARRAYS if self._flows_arrays else _MODERN,
        )
        compat_line = updated.with_changes(
            body=[
                cst.ImportFrom(
                    module=syntax.dotted_expression("parallel_keras.compat"),
                    names=[moved[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)],
                )
            ]
        )
        if not kept:
            return compat_line
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        rest = updated.with_changes(body=[statement.with_changes(names=kept)])
        return cst.FlattenSentinel([rest, compat_line.with_changes(leading_lines=[])])

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(original.body) == 1 and len(updated.body) == 1:
            compat_import = self._compat_import(ctx, original, updated)
            if compat_import is not None:
                return compat_import
        if not self._ok or len(original.body) != 1:
            return updated
        statement = original.body[0]
        if (
            isinstance(statement, cst.Assign)
            and isinstance(statement.value, cst.Call)
            and ctx.qualified_name(statement.value.func) == _GENERATOR
        ):
            ctx.change(
                original,
                RULE,
                "removed the ImageDataGenerator (Keras 3 has none); "
                "its rescale moved to the dataset read below",
            )
            return cst.RemoveFromParent()
        return updated

    def leave_Call(self, ctx, original, updated):
        if ctx.qualified_name(original.func) == _GENERATOR and not (self._ok and self._generators):
            # Keras 3 has no ImageDataGenerator; tf_keras's runs, fed to fit.
            if isinstance(original.func, cst.Attribute):
                ctx.require_import("parallel_keras")
                ctx.require_package(KERAS2_EXTRA)
                ctx.compat(
                    original,
                    RULE,
                    f"`{syntax.dotted(original.func)}` -> `{_COMPAT}`: {_WHY}",
                    _MODERN_ARRAYS if self._flows_arrays else _MODERN,
                )
                return updated.with_changes(func=syntax.expression(_COMPAT))
            return updated
        if not self._ok or not self._flow_call(original):
            return updated
        return self._dataset(ctx, original, updated)

    def _dataset(self, ctx, original, updated):
        rescale = self._generators[original.func.value.value]
        args = []
        positional = syntax.positional(updated)
        directory = syntax.keyword(updated, "directory")
        directory_value = directory.value if directory else positional[0].value
        args.append(syntax.code(directory_value))
        class_mode = syntax.keyword(updated, "class_mode")
        mode: str | None = "categorical"
        if class_mode is not None:
            if isinstance(class_mode.value, cst.SimpleString):
                mode = syntax.string_value(class_mode.value) or "?"  # Bytes: no mode.
            elif syntax.dotted(class_mode.value) == "None":
                mode = None
            else:
                mode = "?"
            if mode not in _LABEL_MODES and mode is not None:
                ctx.flag(
                    original,
                    RULE,
                    f"class_mode {syntax.code(class_mode.value)} has no dataset equivalent",
                    _ACTION,
                )
                return updated
        interpolation_given = False
        for arg in updated.args:
            if arg.keyword is None or arg.keyword.value in ("directory", "class_mode"):
                continue
            new = _KEYWORDS.get(arg.keyword.value)
            if new is None:
                ctx.flag(
                    original,
                    RULE,
                    f"flow_from_directory's {arg.keyword.value}= has no dataset equivalent",
                    _ACTION,
                )
                return updated
            interpolation_given |= new == "interpolation"
            args.append(f"{new}={syntax.code(arg.value)}")
        args.append(
            f"label_mode={mode!r}" if mode is None else f"label_mode='{_LABEL_MODES[mode]}'"
        )
        if not interpolation_given:
            args.append("interpolation='nearest'")
        keras_module = ctx.keras_module()
        code = f"{keras_module}.utils.image_dataset_from_directory({', '.join(args)})"
        # The generator gave float32 batches, rescaled; the dataset may give
        # uint8 ones (nearest resizing).
        images = f"{keras_module}.ops.cast(images, 'float32')"
        if rescale is not None:
            images += f" * ({syntax.code(rescale)})"
        if mode is None:
            code += f".map(lambda images: {images})"
        else:
            code += f".map(lambda images, labels: ({images}, labels))"
        ctx.change(
            original,
            RULE,
            "`flow_from_directory` -> `keras.utils.image_dataset_from_directory` with "
            "the generator's defaults (nearest resizing, label mode) and its rescale: "
            "Keras 3 has no ImageDataGenerator",
        )
        return syntax.expression(code)
