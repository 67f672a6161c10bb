"""Rewrite: Keras 1/2 module paths that no longer exist in Keras 3.

Keras 2 scripts import from implementation modules (`keras.layers.merge`,
`keras.engine.topology`, `keras.utils.np_utils`,
`keras.backend.tensorflow_backend`, ...). Keras 3 exports the same names
from the public packages, and the old modules fail at import, before any
rewrite of their uses could help. The TF1 session helpers of the TensorFlow
backend (`set_session`, `get_session`, `_get_available_gpus`) are dropped
from the import: the sessions and GPU-count rules rewrite their uses.

TensorFlow's private and compat copies of Keras
(`tensorflow._api.v1.keras.applications`, `tensorflow.compat.v1.keras.layers`,
`tensorflow.python.keras.utils`, ...) are Keras 2 paths: they become the
Keras 3 module of the same name when Keras 3 has one (`KERAS3_MODULES`, the
public packages of Keras 3.15), else they are flagged. Private names
(`from keras.layers.merge import _Merge`, the WGAN-GP idiom) are never
moved: Keras 3 has no public twin, so the import stays and is flagged with
the Keras 3 way. `keras.preprocessing.text` and most of
`keras.preprocessing.sequence` are gone: flagged with the nearest Keras 3
name or the `tf_keras` package.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context
from parallel_keras.migrate import syntax

RULE = "imports"

# Legacy module (canonical spelling) -> the Keras 3 module holding its names.
MOVED_MODULES = {
    "keras.layers.merge": "keras.layers",
    "keras.layers.advanced_activations": "keras.layers",
    "keras.layers.core": "keras.layers",
    "keras.layers.convolutional": "keras.layers",
    "keras.layers.pooling": "keras.layers",
    "keras.layers.normalization": "keras.layers",
    "keras.layers.recurrent": "keras.layers",
    "keras.layers.embeddings": "keras.layers",
    "keras.layers.wrappers": "keras.layers",
    "keras.layers.noise": "keras.layers",
    "keras.engine": "keras.layers",
    "keras.engine.topology": "keras.layers",
    "keras.engine.base_layer": "keras.layers",
    "keras.engine.input_layer": "keras.layers",
    "keras.engine.training": "keras.models",
    "keras.utils.np_utils": "keras.utils",
    "keras.utils.generic_utils": "keras.utils",
    "keras.utils.data_utils": "keras.utils",
    "keras.utils.vis_utils": "keras.utils",
    "keras.utils.layer_utils": "keras.utils",
    "keras.backend.tensorflow_backend": "keras.backend",
}
# Names that live elsewhere than their module's new home.
_NAME_HOMES = {
    "Model": "keras.models",
    "Sequential": "keras.models",
    "get_source_inputs": "keras.utils",
}
# Keras 3.15's public packages (tests/migrate/test_imports.py checks the list
# against the installed Keras).
KERAS3_MODULES = frozenset("""
keras keras.activations keras.applications keras.applications.convnext
keras.applications.densenet keras.applications.efficientnet
keras.applications.efficientnet_v2 keras.applications.imagenet_utils
keras.applications.inception_resnet_v2 keras.applications.inception_v3
keras.applications.mobilenet keras.applications.mobilenet_v2
keras.applications.mobilenet_v3 keras.applications.nasnet keras.applications.resnet
keras.applications.resnet50 keras.applications.resnet_v2 keras.applications.vgg16
keras.applications.vgg19 keras.applications.xception keras.backend keras.callbacks
keras.config keras.constraints keras.datasets keras.datasets.boston_housing
keras.datasets.california_housing keras.datasets.cifar10 keras.datasets.cifar100
keras.datasets.fashion_mnist keras.datasets.imdb keras.datasets.mnist
keras.datasets.reuters keras.distillation keras.distribution keras.dtype_policies
keras.export keras.initializers keras.layers keras.legacy keras.legacy.saving
keras.losses keras.metrics keras.mixed_precision keras.models keras.ops
keras.ops.image keras.ops.linalg keras.ops.nn keras.ops.numpy keras.optimizers
keras.optimizers.legacy keras.optimizers.schedules keras.preprocessing
keras.preprocessing.image keras.preprocessing.sequence keras.quantizers
keras.random keras.regularizers keras.saving keras.tree keras.utils
keras.utils.bounding_boxes keras.utils.legacy keras.visualization keras.wrappers
""".split())
# TensorFlow's own copies of Keras 2, by the path scripts import them from.
TF_KERAS_PATHS = (
    "tensorflow._api.v1.keras", "tensorflow._api.v2.keras", "tensorflow.compat.v1.keras",
    "tensorflow.compat.v2.keras", "tensorflow.python.keras",
)
_PRIVATE_ACTIONS = {
    "_Merge": "Keras 3 has no public _Merge: subclass keras.layers.Layer instead, with "
    "call(self, inputs) returning what your _merge_function(inputs) computed from "
    "the list of input tensors (and compute_output_shape(self, input_shapes) "
    "returning input_shapes[0] for an element-wise merge).",
}
_PRIVATE_ACTION = (
    "private Keras 2 names have no Keras 3 twin: subclass or call the public "
    "keras API instead (keras.layers.Layer, keras.ops, keras.utils)."
)
_TF_KERAS_ADVICE = (
    "pip install tf_keras and import it from tf_keras.preprocessing.text (the same "
    "class, so a saved vocabulary still matches), or move to "
    "keras.layers.TextVectorization (a different vocabulary: retrain)."
)
_IMAGE_ADVICE = (
    "Keras 3 kept only load_img, img_to_array, array_to_img, save_img and smart_resize in "
    "keras.preprocessing.image: augment with preprocessing layers (keras.layers."
    "RandomRotation, RandomTranslation, RandomZoom, RandomFlip), or pip install "
    "tf_keras and import it from tf_keras.preprocessing.image."
)
# Removed preprocessing names -> the fix.
PREPROCESSING_FLAGS = {
    **{f"keras.preprocessing.image.{name}": _IMAGE_ADVICE for name in (
        "NumpyArrayIterator", "DirectoryIterator", "DataFrameIterator", "Iterator",
        "apply_affine_transform", "apply_brightness_shift", "apply_channel_shift",
        "random_rotation", "random_shift", "random_shear", "random_zoom",
        "random_channel_shift", "random_brightness")},
    "keras.preprocessing.text": _TF_KERAS_ADVICE,
    "keras.preprocessing.sequence.TimeseriesGenerator": (
        "use keras.utils.timeseries_dataset_from_array with sequence_length=length "
        "(check the window ends: they differ by one), or tf_keras."),
    "keras.preprocessing.sequence.skipgrams": "pip install tf_keras and import it from "
    "tf_keras.preprocessing.sequence.",
    "keras.preprocessing.sequence.make_sampling_table": "pip install tf_keras and import "
    "it from tf_keras.preprocessing.sequence.",
}
# Names removed with TF1 sessions; their uses are rewritten by other rules.
DROPPED_NAMES = frozenset({"set_session", "get_session", "_get_available_gpus"})


def _moved(module: str | None) -> str | None:
    canonical = syntax.canonical_name(module) or ""
    if canonical in MOVED_MODULES:
        return MOVED_MODULES[canonical]
    if (module or "").startswith(TF_KERAS_PATHS) and canonical in KERAS3_MODULES:
        return canonical
    return None


def _preprocessing_fix(qualified: str) -> str | None:
    for name, fix in PREPROCESSING_FLAGS.items():
        if qualified == name or qualified.startswith(name + "."):
            return fix
    return None


def _split(module: str) -> tuple[str, str]:
    parent, _, last = module.rpartition(".")
    return parent, last


def _alias_name(alias: cst.ImportAlias) -> str:
    return alias.asname.name.value if alias.asname else syntax.dotted(alias.name)


def _commas(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    return [
        alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        for alias in aliases[:-1]
    ] + aliases[-1:]


class ImportPathRule(context.Rule):
    """`from keras.layers.merge import concatenate` -> `from keras.layers import concatenate`."""

    name = RULE

    def __init__(self):
        self._in_imports: set[int] = set()
        self._flagged_lines: set[int] = set()

    def visit_ImportFrom(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def visit_Import(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def leave_ImportFrom(self, ctx, original, updated):
        # `from tensorflow.python.keras.layers import Dense`: the same module
        # in Keras 3, renamed here (before other rules split the statement).
        if updated.relative or updated.module is None or isinstance(
                updated.names, cst.ImportStar):
            return updated
        old_module = syntax.dotted(updated.module)
        canonical = syntax.canonical_name(old_module) or ""
        if not old_module.startswith(TF_KERAS_PATHS) or canonical not in KERAS3_MODULES:
            return updated
        if any(syntax.dotted(a.name).startswith("_") or syntax.dotted(a.name) in DROPPED_NAMES
               for a in updated.names):
            return updated
        ctx.change(original, RULE, f"`from {old_module} import ...` -> `from {canonical} "
                   "import ...`: TensorFlow's copy of Keras 2; the Keras 3 module of the "
                   "same name")
        return updated.with_changes(module=syntax.expression(canonical))

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(updated.body) != 1:
            return updated
        statement = updated.body[0]
        if isinstance(statement, cst.ImportFrom):
            new = self._import_from(ctx, original, statement)
        elif isinstance(statement, cst.Import):
            new = self._import(ctx, original, statement)
        else:
            return updated
        if new is None:
            return updated
        if not new:
            return cst.RemoveFromParent()
        lines = [cst.SimpleStatementLine(body=[small]) for small in new]
        lines[0] = lines[0].with_changes(
            leading_lines=updated.leading_lines,
            trailing_whitespace=updated.trailing_whitespace,
        )
        return cst.FlattenSentinel(lines) if len(lines) > 1 else lines[0]

    def _import_from(self, ctx, line, statement):
        if statement.relative or statement.module is None:
            return None
        if isinstance(statement.names, cst.ImportStar):
            return None
        old_module = syntax.dotted(statement.module)
        canonical = syntax.canonical_name(old_module) or ""
        for alias in statement.names:
            fix = _preprocessing_fix(f"{canonical}.{syntax.dotted(alias.name)}")
            if fix is not None:
                ctx.flag(line, RULE, f"`{canonical}.{syntax.dotted(alias.name)}` does not "
                         "exist in Keras 3", fix)
        target = _moved(old_module)
        if target is None and old_module.startswith(TF_KERAS_PATHS):
            ctx.flag(line, RULE, f"`{old_module}` is TensorFlow's copy of Keras 2; Keras 3 "
                     f"has no `{canonical}`",
                     "import the name from the public Keras 3 package that holds it "
                     "(keras.layers, keras.models, keras.utils, ...).")
            return None
        if target is not None:
            return self._names_from_moved(ctx, line, statement, old_module, target)
        # `from keras.backend import tensorflow_backend as KTF`: a moved module
        # imported by name becomes its new module under the same local name.
        moved = [
            alias for alias in statement.names
            if _moved(f"{old_module}.{syntax.dotted(alias.name)}") is not None
        ]
        if not moved:
            return None
        kept = [alias for alias in statement.names if alias not in moved]
        new = []
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new.append(statement.with_changes(names=kept))
        for alias in moved:
            full = f"{old_module}.{syntax.dotted(alias.name)}"
            parent, last = _split(_moved(full))
            local = _alias_name(alias)
            new.append(cst.ImportFrom(
                module=syntax.expression(parent),
                names=[cst.ImportAlias(
                    name=cst.Name(last),
                    asname=None if local == last else cst.AsName(name=cst.Name(local)),
                )],
            ))
            ctx.change(
                line, RULE,
                f"`from {old_module} import {syntax.dotted(alias.name)}` -> "
                f"`from {parent} import {last}`: the module does not exist in Keras 3",
            )
        return new

    def _names_from_moved(self, ctx, line, statement, old_module, target):
        groups: dict[str, list[cst.ImportAlias]] = {}
        dropped = []
        private = []
        for alias in statement.names:
            name = syntax.dotted(alias.name)
            if name in DROPPED_NAMES:
                dropped.append(name)
                continue
            if name.startswith("_"):
                private.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                ctx.flag(line, RULE, f"`{name}` is private to Keras 2's `{old_module}`",
                         _PRIVATE_ACTIONS.get(name, _PRIVATE_ACTION))
                continue
            home = _NAME_HOMES.get(name, target)
            groups.setdefault(home, []).append(
                alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            )
        new = []
        if private:  # Left as it was: the line fails until a person replaces it.
            new.append(statement.with_changes(names=_commas(private)))
        if private and not groups and not dropped:
            return None  # Only private names: the statement stays as it was.
        for home, aliases in groups.items():
            aliases = [
                alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for alias in aliases[:-1]
            ] + aliases[-1:]
            new.append(cst.ImportFrom(module=syntax.expression(home), names=aliases))
        message = f"`from {old_module} import ...` -> "
        message += ", ".join(f"`from {home} import ...`" for home in groups) or "removed"
        message += ": the module does not exist in Keras 3"
        if dropped:
            message += (
                f"; dropped {', '.join(dropped)} (TF1 session helpers; their "
                "uses are rewritten or flagged)"
            )
        ctx.change(line, RULE, message)
        return new

    def _import(self, ctx, line, statement):
        names = list(statement.names)
        touched = False
        for index, alias in enumerate(names):
            full = syntax.dotted(alias.name)
            target = _moved(full)
            if target is None:
                continue
            touched = True
            # Without an alias, uses spell the legacy path; they are
            # rewritten below, and the new import binds the same root.
            names[index] = alias.with_changes(name=syntax.expression(target))
            ctx.change(
                line, RULE,
                f"`import {full}` -> `import {target}`: the module does not exist in Keras 3",
            )
        if not touched:
            return None
        return [statement.with_changes(names=names)]

    def leave_Attribute(self, ctx, original, updated):
        # `keras.utils.np_utils.to_categorical` -> `keras.utils.to_categorical`.
        text = syntax.dotted(original)
        if id(original) in self._in_imports:
            return updated
        qualified = ctx.qualified_name(original) or ""
        fix = _preprocessing_fix(qualified)
        # `keras.preprocessing.text.Tokenizer(...)`: flagged once per line.
        if fix is not None:
            if ctx.line(original) not in self._flagged_lines:
                self._flagged_lines.add(ctx.line(original))
                ctx.flag(original, RULE, f"`{qualified}` does not exist in Keras 3", fix)
            return updated
        if text is None or not isinstance(original.value, cst.Attribute):
            return updated
        module_text = syntax.dotted(original.value)
        target = _moved(module_text)
        if target is None or not module_text.startswith(("keras.", "tf.keras.", "tensorflow.keras.")):
            return updated
        if original.attr.value in DROPPED_NAMES:
            return updated
        ctx.change(
            original, RULE,
            f"`{text}` -> `{target}.{original.attr.value}`: the module does not exist in Keras 3",
        )
        return syntax.expression(f"{target}.{original.attr.value}")


AUDIT = [
    *((f"{old}.*", f"{new}.*", "the module does not exist in Keras 3")
      for old, new in sorted(MOVED_MODULES.items())),
    *((f"{root}.<module>", "keras.<module>",
       "TensorFlow's copy of Keras 2; the Keras 3 module of the same name (flagged "
       "when Keras 3 has none)") for root in TF_KERAS_PATHS),
    ("from keras.<module> import _Private (e.g. keras.layers.merge._Merge)", None,
     _PRIVATE_ACTIONS["_Merge"]),
    *((f"{name}.*" if name.count(".") == 2 else name, None, fix)
      for name, fix in sorted(PREPROCESSING_FLAGS.items())),
    ("keras.preprocessing.sequence.pad_sequences", "(kept)",
     "Keras 3 still has it (also as keras.utils.pad_sequences)"),
    *((f"keras.backend.{name}", "(import dropped)", "TF1 session helper; its uses are "
       "rewritten by the sessions/GPU-count rules") for name in sorted(DROPPED_NAMES)),
]
