# SPDX-License-Identifier: Apache-2.0
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
public packages of Keras 3.15), else they are flagged. Private names (`from
keras.layers.merge import _Merge`, the WGAN-GP idiom) are never moved: Keras
3 has no public twin, so the import stays and is flagged with the Keras 3
way. `keras.preprocessing.text` and most of `keras.preprocessing.sequence`
are gone: flagged with the nearest Keras 3 name or the `tf_keras` package.
The tables of where Keras 2's module files moved are in `keras2_modules.py`,
shared with `Context.qualified_name`, which names their uses as Keras 3 does
for every other rule; this rule reads the names as written
(`Context.written_qualified_name`).

Names of the old modules that Keras 3 dropped (`HDF5Matrix`, the enqueuers,
`Network`, `LocallyConnected2D`, ...; `REMOVED_NAMES`) and whole modules with
no Keras 3 home (`keras.wrappers.scikit_learn`; `GONE_MODULES`) stay as they
were and are flagged with the Keras 3 way, in imports and in dotted uses.
A from-import another rule split first (`from keras.utils import
multi_gpu_model, np_utils`) is rewritten when its block is left.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.keras2_modules import (
    KERAS3_MODULES,
    MOVED_MODULES,
    TF_KERAS_PATHS,
    keras3_module,
    keras3_name,
)
from parallel_keras.migrate.rules import gpu_count, requirements

RULE = "imports"

# What a Keras 2 module's `*` also gave that its new home's `*` does not
# (keras/engine/__init__.py exported Model beside the layer classes).
_STAR_EXTRAS = {
    "keras.engine": ("from keras.models import Model",),
    "keras.engine.training": (),
}
_GONE_HELPER = (
    "Keras 3 has no public twin of this Keras 2 helper: inline what it did "
    "(most were a few lines of NumPy), or pip install tf_keras and import it from there."
)
_ENQUEUER_MODERN = (
    "give fit() a keras.utils.PyDataset (its workers=/use_multiprocessing= "
    "replace the enqueuer's) or a tf.data.Dataset"
)
_LOAD_WEIGHTS = (
    "call model.load_weights(path) (Keras 3 reads Keras 2 .h5 weight files; "
    "by_name=True became skip_mismatch=True)."
)
_LOCALLY = (
    "Keras 3 removed LocallyConnected1D/2D: pip install tf_keras and import it from "
    "tf_keras.layers, or replace it with a Conv layer (shared weights: retrain)."
)
# Public Keras 2 names of the moved modules (and of keras.layers) that Keras 3
# does not have, by their Keras 3 spelling -> the fix. Flagged, never moved
# (tests/migrate/test_imports.py checks each is absent from Keras 3).
# `print_summary` is not here: rules/model_api.py rewrites it.
REMOVED_NAMES = {
    "keras.utils.HDF5Matrix": "Keras 3 has no HDF5Matrix: read the arrays with h5py "
    "(h5py.File(path)['x'][...]) or stream them through a keras.utils.PyDataset.",
    "keras.utils.count_params": "call layer.count_params() or model.count_params().",
    "keras.utils.plot": "use keras.utils.plot_model (Keras 1's plot, renamed in Keras 2).",
    "keras.utils.probas_to_classes": "use np.argmax(probas, axis=-1) (Keras 1 helper).",
    "keras.utils.categorical_probas_to_classes": "use np.argmax(probas, axis=-1) (Keras 1 helper).",
    **{
        f"keras.utils.{name}": _GONE_HELPER
        for name in (
            "func_dump",
            "func_load",
            "has_arg",
            "to_list",
            "unpack_singleton",
            "validate_file",
            "ask_to_proceed_with_overwrite",
            "convert_all_kernels_in_model",
            "convert_dense_weights_data_format",
            "convert_kernel",
            "conv_output_length",
            "conv_input_length",
            "deconv_length",
            "normalize_tuple",
            "normalize_padding",
            "H5Dict",
            "slice_arrays",
            "object_list_uid",
        )
    },
    "keras.optimizers.clip_norm": "Keras 3 has no clip_norm (a helper of Keras 2's "
    "get_updates-based optimizers): pass clipnorm= to a keras.optimizers class, or write "
    "g * c / max(norm, c) with keras.ops where you need it.",
    "keras.optimizers.TFOptimizer": "Keras 3 has no TFOptimizer (a wrapper of TF1 "
    "tf.train optimizers for Keras 2's get_updates, which Keras 3 never calls): build the "
    "keras.optimizers class of the same algorithm instead. The import now comes from "
    "parallel_keras.compat so that the module still imports; building one raises.",
    "keras.layers.Network": "subclass or build keras.Model (Keras 2's Network was a "
    "Model without compile/fit; Keras 3 has only Model).",
    "keras.models.Network": "subclass or build keras.Model (Keras 2's Network was a "
    "Model without compile/fit; Keras 3 has only Model).",
    "keras.layers.Container": "use keras.Model(inputs, outputs) (Keras 1's Container).",
    "keras.layers.Node": "Keras 3 has no public Node: read layer.input / layer.output "
    "or model.get_layer(...) instead of the graph nodes.",
    "keras.layers.LocallyConnected1D": _LOCALLY,
    "keras.layers.LocallyConnected2D": _LOCALLY,
    "keras.layers.SyncBatchNormalization": "use keras.layers.BatchNormalization with "
    "synchronized=True.",
    "keras.models.model_from_yaml": "Keras 3 dropped YAML model configs: save the "
    "architecture with model.to_json() and load it with keras.models.model_from_json.",
    "keras.models.Functional": "use keras.Model (Keras 3 functional models are "
    "keras.Model instances; the Functional class is private).",
    "keras.models.model_from_config": "use keras.saving.deserialize_keras_object on the config "
    "or keras.Model.from_config(config['config']).",
    **{
        f"keras.models.{name}": _LOAD_WEIGHTS
        for name in (
            "load_weights_from_hdf5_group",
            "load_weights_from_hdf5_group_by_name",
            "preprocess_weights_for_loading",
            "save_weights_to_hdf5_group",
        )
    },
}
_SKLEARN = (
    "Keras 3 has no keras.wrappers.scikit_learn: pip install scikeras and use "
    "scikeras.wrappers.KerasClassifier or KerasRegressor (build_fn= became model=), or "
    "keras.wrappers.SKLearnClassifier or SKLearnRegressor (model=build_fn, "
    "model_kwargs={...})."
)
# Keras 2 modules with no Keras 3 home at all -> the fix (flagged where imported).
GONE_MODULES = {
    "keras.wrappers.scikit_learn": _SKLEARN,
    "keras.legacy.interfaces": "Keras 3 has no keras.legacy.interfaces (Keras 2's "
    "argument-renaming decorators): drop the @interfaces.legacy_* decorators.",
    "keras.legacy.layers": "Keras 3 has no keras.legacy.layers: use the Keras 3 layer "
    "of the same role from keras.layers (Merge -> keras.layers.Concatenate/Add/...).",
}
_PRIVATE_ACTIONS = {
    "_obtain_input_shape": "Keras 3 has no public _obtain_input_shape: pass input_shape "
    "explicitly (e.g. (224, 224, 3)) and drop the call, or copy its checks into the script.",
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
    **{
        f"keras.preprocessing.image.{name}": _IMAGE_ADVICE
        for name in (
            "NumpyArrayIterator",
            "DirectoryIterator",
            "DataFrameIterator",
            "Iterator",
            "apply_affine_transform",
            "apply_brightness_shift",
            "apply_channel_shift",
            "random_rotation",
            "random_shift",
            "random_shear",
            "random_zoom",
            "random_channel_shift",
            "random_brightness",
        )
    },
    "keras.preprocessing.text": _TF_KERAS_ADVICE,
    "keras.preprocessing.sequence.TimeseriesGenerator": (
        "use keras.utils.timeseries_dataset_from_array with sequence_length=length "
        "(check the window ends: they differ by one), or tf_keras."
    ),
    "keras.preprocessing.sequence.skipgrams": "pip install tf_keras and import it from "
    "tf_keras.preprocessing.sequence.",
    "keras.preprocessing.sequence.make_sampling_table": "pip install tf_keras and import "
    "it from tf_keras.preprocessing.sequence.",
}
# Names removed with TF1 sessions; their uses are rewritten by other rules.
DROPPED_NAMES = frozenset({"set_session", "get_session", "_get_available_gpus"})
# Backend names Keras 3 lacks whose every call another rule rewrites to a
# dotted name (`parallel_keras.compat.function(...)`): an import by name goes.
_DROPPED_BACKEND = DROPPED_NAMES | {"function", "learning_phase", "set_learning_phase"}

_COMPAT = "parallel_keras.compat"
_TF_KERAS_WHY = (
    "Keras 2's own code from the tf_keras package (same results; a saved "
    "vocabulary still matches), fed to Keras 3's fit"
)
# Keras 2 name (canonical spelling, as Keras 3 would spell its module) ->
# (its parallel_keras.compat name, why it keeps the meaning, the modern form).
COMPAT_NAMES: dict[str, tuple[str, str, str]] = {
    **{
        f"keras.preprocessing.text.{name}": (
            name,
            _TF_KERAS_WHY,
            "keras.layers.TextVectorization (a different vocabulary: retrain)",
        )
        for name in (
            "Tokenizer",
            "text_to_word_sequence",
            "one_hot",
            "hashing_trick",
            "tokenizer_from_json",
        )
    },
    # Keras 2's TensorFlow backend module imported TF's device_lib; rules/gpu_count.py
    # rewrites `K.device_lib`.
    "keras.backend.device_lib": (
        "device_lib",
        gpu_count.DEVICE_LIB_WHY,
        gpu_count.DEVICE_LIB_MODERN,
    ),
    "keras.preprocessing.sequence.TimeseriesGenerator": (
        "TimeseriesGenerator",
        _TF_KERAS_WHY,
        "keras.utils.timeseries_dataset_from_array with sequence_length=length (check "
        "the window ends: they differ by one)",
    ),
    **{
        f"keras.preprocessing.sequence.{name}": (
            name,
            _TF_KERAS_WHY,
            "compute the pairs with NumPy (Keras 3 has no skip-gram helpers)",
        )
        for name in ("skipgrams", "make_sampling_table")
    },
    **{
        f"keras.preprocessing.image.{name}": (
            name,
            _TF_KERAS_WHY,
            "augment with preprocessing layers (keras.layers.RandomRotation, "
            "RandomTranslation, RandomZoom, RandomFlip) and read with "
            "keras.utils.image_dataset_from_directory",
        )
        for name in (
            "NumpyArrayIterator",
            "DirectoryIterator",
            "Iterator",
            "apply_affine_transform",
            "apply_brightness_shift",
            "apply_channel_shift",
            "random_rotation",
            "random_shift",
            "random_shear",
            "random_zoom",
            "random_channel_shift",
            "random_brightness",
        )
    },
    **{
        f"keras.utils.{name}": (
            name,
            "Keras 2's enqueuer from the tf_keras package (the same threads or "
            "processes running the generator ahead of the loop)",
            _ENQUEUER_MODERN,
        )
        for name in ("GeneratorEnqueuer", "OrderedEnqueuer", "SequenceEnqueuer")
    },
    "keras.optimizers.clip_norm": (
        "clip_norm",
        "Keras 2's g * c / n where the norm n reaches c (same numbers)",
        "clipnorm= or global_clipnorm= on a keras.optimizers class",
    ),
    "keras.layers._Merge": (
        "Merge",
        "Keras 2's _Merge contract (_merge_function over the list of inputs) on a "
        "public keras.layers.Layer",
        "subclass keras.layers.Layer with call(self, inputs) returning what "
        "_merge_function computed",
    ),
    **{
        f"{module}._obtain_input_shape": (
            "obtain_input_shape",
            "Keras 2's input-shape helper of the applications, same checks and results",
            "pass input_shape explicitly, e.g. (224, 224, 3)",
        )
        for module in (
            "keras.applications.imagenet_utils",
            "keras_applications.imagenet_utils",
        )
    },
    "keras.layers.Container": (
        "Container",
        "Keras 1's Container is a functional keras.Model",
        "keras.Model(inputs, outputs)",
    ),
    "keras.layers.Network": (
        "Network",
        "Keras 2's Network is a functional keras.Model",
        "keras.Model(inputs, outputs)",
    ),
    "keras.models.Network": (
        "Network",
        "Keras 2's Network is a functional keras.Model",
        "keras.Model(inputs, outputs)",
    ),
    # Keras 2 helpers of keras.utils' implementation modules (imported from
    # keras.utils.generic_utils / conv_utils, or re-exported by keras.utils).
    **{
        f"keras.utils.{name}": (
            f"generic_utils.{name}",
            "Keras 2's helper, same results",
            "inline it (a few lines of Python)",
        )
        for name in (
            "func_dump",
            "func_load",
            "has_arg",
            "to_list",
            "unpack_singleton",
            "slice_arrays",
            "object_list_uid",
        )
    },
    **{
        f"keras.utils.{name}": (
            f"conv_utils.{name}",
            "Keras 2's helper, same results",
            "inline the shape arithmetic in the layer",
        )
        for name in (
            "convert_kernel",
            "conv_output_length",
            "conv_input_length",
            "deconv_length",
            "normalize_tuple",
            "normalize_padding",
        )
    },
}
# Keras 2 names no code can run under Keras 3 whose import alone must not fail
# (a module that imports or subclasses them but may never build one): imported
# from parallel_keras.compat, where building one raises with the fix; flagged.
IMPORTABLE_FLAGGED = {"keras.optimizers.TFOptimizer": "TFOptimizer"}
# Keras 2 short names of losses and metrics Keras 3 spells out (the same
# functions): `from keras.losses import mse` (the Keras 2 VAE example).
_SHORT_NAMES = {
    "mse": "mean_squared_error",
    "MSE": "mean_squared_error",
    "mae": "mean_absolute_error",
    "MAE": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "MAPE": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "MSLE": "mean_squared_logarithmic_error",
    "kld": "kl_divergence",
    "KLD": "kl_divergence",
    "kullback_leibler_divergence": "kl_divergence",
    "logcosh": "log_cosh",
}
RENAMED_NAMES = {
    **{f"keras.losses.{old}": f"keras.losses.{new}" for old, new in _SHORT_NAMES.items()},
    **{f"keras.metrics.{old}": f"keras.metrics.{new}" for old, new in _SHORT_NAMES.items()},
    "keras.losses.cosine_proximity": "keras.losses.cosine_similarity",
    "keras.losses.cosine": "keras.losses.cosine_similarity",
    # Keras 2's keras/optimizers.py: `sgd = SGD`, `rmsprop = RMSprop`, ...
    **{
        f"keras.optimizers.{name.lower()}": f"keras.optimizers.{name}"
        for name in ("SGD", "RMSprop", "Adagrad", "Adadelta", "Adam", "Adamax", "Nadam")
    },
}
# Whole Keras 2 modules imported by name whose every name is in parallel_keras.compat.
COMPAT_MODULES = {
    "keras.preprocessing.text": (
        _TF_KERAS_WHY,
        "keras.layers.TextVectorization (a different vocabulary: retrain)",
    ),
}
# Modules of parallel_keras.compat that stand for a Keras 2 module.
_COMPAT_MODULE_WHY = {
    "parallel_keras.compat.conv_utils": (
        "Keras 2's conv_utils helpers (private in Keras 3), same results",
        "inline the shape arithmetic in the layer",
    ),
    "parallel_keras.compat.generic_utils": (
        "Keras 2's generic_utils (Keras 3's public names re-exported, the list helpers kept)",
        "import Progbar, get_custom_objects, CustomObjectScope from keras.utils and "
        "inline the list helpers",
    ),
}


def compat_name(qualified: str) -> tuple[str, str, str] | None:
    """(parallel_keras.compat name, why, modern form) for a Keras 2 name, else None."""
    canonical = syntax.canonical_name(qualified) or ""
    if canonical in COMPAT_NAMES:
        return COMPAT_NAMES[canonical]
    return COMPAT_NAMES.get(keras3_name(canonical) or "")


def _removed_fix(qualified: str) -> str | None:
    """The fix for a Keras 2 name Keras 3 lacks (any spelling), else None."""
    canonical = syntax.canonical_name(qualified) or ""
    for module, fix in GONE_MODULES.items():
        if canonical == module or canonical.startswith(module + "."):
            return fix
    return REMOVED_NAMES.get(keras3_name(canonical) or canonical)


def _preprocessing_fix(qualified: str) -> str | None:
    for name, fix in PREPROCESSING_FLAGS.items():
        if qualified == name or qualified.startswith(name + "."):
            return fix
    return None


def _split(module: str) -> tuple[str, str]:
    parent, _, last = module.rpartition(".")
    return parent, last


def _alias_name(alias: cst.ImportAlias) -> str:
    return alias.evaluated_alias or syntax.dotted(alias.name)


def _commas(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    return [
        alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        for alias in aliases[:-1]
    ] + aliases[-1:]


def _without_dropped_backend(ctx: context.Context, line, statement):
    """`from keras.backend import ...` without the names Keras 3 lacks; None when none is there."""
    dropped = [a for a in statement.names if syntax.dotted(a.name) in _DROPPED_BACKEND]
    if not dropped:
        return None
    kept = [a for a in statement.names if a not in dropped]
    ctx.change(
        line,
        RULE,
        f"dropped {', '.join(syntax.dotted(a.name) for a in dropped)} from "
        "`from keras.backend import ...`: Keras 3 has none; their calls are "
        "rewritten (parallel_keras.compat, tf.config)",
    )
    if not kept:
        return []
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return [statement.with_changes(names=_commas(kept))]


def _flag_without_twin(ctx: context.Context, line, old_module: str, name: str) -> bool:
    """Flags `name` of moved `old_module` when Keras 3 removed it or it is private."""
    fix = REMOVED_NAMES.get(keras3_name(f"{old_module}.{name}") or "")
    if fix is not None:  # `from keras.utils.io_utils import HDF5Matrix`
        ctx.flag(line, RULE, f"`{old_module}.{name}` has no Keras 3 twin", fix)
        return True
    if name.startswith("_"):
        ctx.flag(
            line,
            RULE,
            f"`{name}` is private to Keras 2's `{old_module}`",
            _PRIVATE_ACTIONS.get(name, _PRIVATE_ACTION),
        )
        return True
    return False


def _moved_names_message(old_module: str, groups, dropped: list[str]) -> str:
    """What became of `from <old_module> import ...`: its new homes and dropped names."""
    message = f"`from {old_module} import ...` -> "
    message += ", ".join(f"`from {home} import ...`" for home in groups) or "removed"
    message += ": the module does not exist in Keras 3"
    if dropped:
        message += (
            f"; dropped {', '.join(dropped)} (TF1 session helpers; their "
            "uses are rewritten or flagged)"
        )
    return message


def _flag_removed_names(ctx: context.Context, line, statement, canonical: str) -> bool:
    """Flags each imported name Keras 3 removed; whether there was one.

    `from keras.wrappers.scikit_learn import KerasClassifier`, `from
    keras.layers import LocallyConnected2D`, `from
    keras.applications.imagenet_utils import _obtain_input_shape`.
    """
    gone = False
    for alias in statement.names:
        name = syntax.dotted(alias.name)
        fix = _removed_fix(f"{canonical}.{name}")
        if fix is None and name.startswith("_"):
            fix = _PRIVATE_ACTIONS.get(name, _PRIVATE_ACTION)
        if fix is not None:
            gone = True
            ctx.flag(line, RULE, f"`{canonical}.{name}` does not exist in Keras 3", fix)
    return gone


class ImportPathRule(context.Rule):
    """`from keras.layers.merge import concatenate` -> `from keras.layers import concatenate`."""

    name = RULE
    reads = {
        "unused_legacy_interfaces": context.Phase.REWRITE,
        "removed_decorators": context.Phase.REWRITE,
        "keras1_merge_names": context.Phase.REWRITE,
        "keras1_merge_kept": context.Phase.REWRITE,
    }

    def __init__(self):
        self._in_imports: set[int] = set()
        self._flagged_lines: set[int] = set()
        # Lines this rule saw, and the original of each from-import by module:
        # a line another rule split first (`from keras.utils import
        # multi_gpu_model, np_utils`) is only seen in its block (see _block).
        self._seen: list[cst.CSTNode] = []  # statements, kept alive for `is`
        self._originals: list[cst.ImportFrom] = []
        self._compat_parts: set[int] = set()

    def visit_ImportFrom(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def visit_Import(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def visit_Attribute(self, ctx, node):
        # `keras.preprocessing.text.Tokenizer`: the module part is not flagged
        # when the whole name is rewritten onto parallel_keras.compat.
        if id(node) in self._in_imports or id(node) in self._compat_parts:
            return
        qualified = ctx.written_qualified_name(node) or ""
        if (
            qualified.startswith(("keras.", "tensorflow.keras."))
            and not qualified.startswith("keras.backend.")
            and compat_name(qualified)
        ):
            value = node.value
            while isinstance(value, cst.Attribute):
                self._compat_parts.add(id(value))
                value = value.value

    def leave_ImportFrom(self, ctx, original, updated):
        # `from tensorflow.python.keras.layers import Dense`: the same module
        # in Keras 3, renamed here (before other rules split the statement).
        if updated.relative or updated.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        old_module = syntax.dotted(updated.module)
        self._originals.append(original)
        canonical = syntax.canonical_name(old_module) or ""
        if not old_module.startswith(TF_KERAS_PATHS) or canonical not in KERAS3_MODULES:
            return updated
        if any(
            syntax.dotted(a.name).startswith("_") or syntax.dotted(a.name) in DROPPED_NAMES
            for a in updated.names
        ):
            return updated
        ctx.change(
            original,
            RULE,
            f"`from {old_module} import ...` -> `from {canonical} "
            "import ...`: TensorFlow's copy of Keras 2; the Keras 3 module of the "
            "same name",
        )
        return updated.with_changes(module=syntax.expression(canonical))

    def leave_SimpleStatementLine(self, ctx, original, updated):
        new = self._line(ctx, original, updated)
        for line in (
            original,
            updated,
            *(new.nodes if isinstance(new, cst.FlattenSentinel) else [new]),
        ):
            self._seen.extend(getattr(line, "body", ()))
        return new

    def leave_IndentedBlock(self, ctx, original, updated):
        return self._block(ctx, updated)

    def leave_Module(self, ctx, original, updated):
        return self._block(ctx, updated)

    def _block(self, ctx, updated):
        # Import lines an earlier rule replaced by several lines (the engine
        # stops a node's hooks there): rewritten here, reported at the
        # original statement's line.
        unseen = [
            line
            for line in updated.body
            if isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(line.body[0], cst.ImportFrom)
            and line.body[0].module is not None
            and not any(line.body[0] is seen for seen in self._seen)
        ]
        if not unseen:
            return updated
        body: list[cst.BaseStatement] = []
        for line in updated.body:
            if any(line is other for other in unseen):
                original = self._original_of(line.body[0])
                if original is not None:
                    new = self._line(ctx, original, line)
                    self._seen.append(line.body[0])
                    if isinstance(new, cst.FlattenSentinel):
                        body.extend(new.nodes)
                    elif not isinstance(new, cst.RemovalSentinel):
                        body.append(new)
                    continue
            body.append(line)
        return updated.with_changes(body=body)

    def _original_of(self, statement):
        # The first from-import of the same module, not yet rewritten, that
        # held all of `statement`'s names.
        names = {syntax.dotted(alias.name) for alias in statement.names}
        for original in self._originals:
            if (
                original.module is not None
                and not isinstance(original.names, cst.ImportStar)
                and syntax.dotted(original.module) == syntax.dotted(statement.module)
                and not any(original is seen for seen in self._seen)
                and names <= {syntax.dotted(alias.name) for alias in original.names}
            ):
                self._seen.append(original)
                return original
        return None

    def _line(self, ctx, original, updated):
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
        if (
            syntax.dotted(statement.module) == "keras.legacy"
            and [syntax.dotted(alias.name) for alias in statement.names] == ["interfaces"]
            and id(line) in ctx.facts.unused_legacy_interfaces
        ):
            # Only its @interfaces.legacy_* decorators used it (removed with it):
            # they translated Keras 1 argument names; the calls use Keras 2's.
            ctx.change(
                line,
                RULE,
                "removed `from keras.legacy import interfaces`: Keras 3 has none; it "
                "served only the Keras 1 argument-name decorators, removed too",
            )
            return []
        if isinstance(statement.names, cst.ImportStar):
            return self._star(ctx, line, statement)
        old_module = syntax.dotted(statement.module)
        canonical = syntax.canonical_name(old_module) or ""
        if canonical == "keras.backend":
            without_dropped = _without_dropped_backend(ctx, line, statement)
            if without_dropped is not None:
                return without_dropped
        compat = self._compat_names(ctx, line, statement, canonical)
        if compat is not None:
            return compat
        for alias in statement.names:
            fix = _preprocessing_fix(f"{canonical}.{syntax.dotted(alias.name)}")
            if fix is not None:
                ctx.flag(
                    line,
                    RULE,
                    f"`{canonical}.{syntax.dotted(alias.name)}` does not exist in Keras 3",
                    fix,
                )
        if (
            canonical.startswith("keras.")
            and keras3_module(old_module) is None
            and _flag_removed_names(ctx, line, statement, canonical)
        ):
            return None
        target = keras3_module(old_module)
        if target is None and old_module.startswith(TF_KERAS_PATHS):
            ctx.flag(
                line,
                RULE,
                f"`{old_module}` is TensorFlow's copy of Keras 2; Keras 3 has no `{canonical}`",
                "import the name from the public Keras 3 package that holds it "
                "(keras.layers, keras.models, keras.utils, ...).",
            )
            return None
        if target is not None:
            return self._names_from_moved(ctx, line, statement, old_module, target)
        return self._modules_moved_by_name(ctx, line, statement, old_module)

    def _modules_moved_by_name(self, ctx, line, statement, old_module):
        """`from keras.backend import tensorflow_backend as KTF`: each moved module, from its new home.

        A moved module imported by name becomes its new module under the same
        local name; the statement's other names stay. None when none moved.
        """
        moved = [
            alias
            for alias in statement.names
            if keras3_module(f"{old_module}.{syntax.dotted(alias.name)}") is not None
        ]
        if not moved:
            return None
        kept = [alias for alias in statement.names if alias not in moved]
        new = []
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new.append(statement.with_changes(names=_commas(kept)))
        called = ctx.facts.keras1_merge_names - ctx.facts.keras1_merge_kept
        for alias in moved:
            full = f"{old_module}.{syntax.dotted(alias.name)}"
            if _alias_name(alias) in called and syntax.canonical_name(full) == "keras.layers.merge":
                # Keras 1's merge() function: its calls are rewritten by
                # rules/keras1_merge.py, so the name is no longer imported.
                ctx.change(
                    line,
                    RULE,
                    f"`from {old_module} import merge` removed: Keras 1's "
                    "merge() calls become the keras.layers function of their mode",
                )
                continue
            new_module = keras3_module(full)
            if new_module is None:  # Only moved names are here.
                continue
            parent, last = _split(new_module)
            local = _alias_name(alias)
            if not parent:
                # `from tensorflow.python import keras`: Keras 3 is the
                # top-level package itself.
                new.append(
                    cst.Import(
                        names=[
                            cst.ImportAlias(
                                name=cst.Name(last),
                                asname=None if local == last else cst.AsName(name=cst.Name(local)),
                            )
                        ]
                    )
                )
                ctx.change(
                    line,
                    RULE,
                    f"`from {old_module} import {syntax.dotted(alias.name)}` -> "
                    f"`import {last}`: Keras 3 is the `{last}` package",
                )
                continue
            new.append(
                cst.ImportFrom(
                    module=syntax.dotted_expression(parent),
                    names=[
                        cst.ImportAlias(
                            name=cst.Name(last),
                            asname=None if local == last else cst.AsName(name=cst.Name(local)),
                        )
                    ],
                )
            )
            message = (
                f"`from {old_module} import {syntax.dotted(alias.name)}` -> "
                f"`from {parent} import {last}`: the module does not exist in Keras 3"
            )
            if new_module in _COMPAT_MODULE_WHY:
                why, modern = _COMPAT_MODULE_WHY[new_module]
                ctx.compat(line, RULE, f"{message}; {why}", modern)
            else:
                ctx.change(line, RULE, message)
        return new

    def _star(self, ctx, line, statement):
        """`from keras.layers.core import *` -> `from keras.layers import *`."""
        canonical = syntax.canonical_name(syntax.dotted(statement.module)) or ""
        target = MOVED_MODULES.get(canonical)
        if target is None or not target.startswith("keras."):
            return None
        extras = _STAR_EXTRAS.get(canonical, ())
        ctx.change(
            line,
            RULE,
            f"`from {canonical} import *` -> `from {target} import *`"
            + "".join(f", `{extra}`" for extra in extras)
            + f": Keras 3 has no {canonical}; its public names live there",
        )
        written = [statement.with_changes(module=syntax.dotted_expression(target))]
        for extra in extras:
            parsed = cst.parse_statement(extra)
            assert isinstance(parsed, cst.SimpleStatementLine)  # An import line.
            written.append(parsed.body[0])
        return written

    def _compat_names(self, ctx, line, statement, canonical):
        """Names Keras 3 lacks that parallel_keras.compat keeps, imported from there.

        `from keras.preprocessing.text import Tokenizer` -> `from
        parallel_keras.compat import Tokenizer`; `from keras.layers.merge import
        _Merge` -> `from parallel_keras.compat import Merge as _Merge`; `from
        keras.preprocessing import text` -> `from parallel_keras import compat as
        text`. The other names of the statement are migrated as usual.
        """
        found: dict[str, list[cst.ImportAlias]] = {}
        rest = []
        for alias in statement.names:
            name = syntax.dotted(alias.name)
            full = f"{canonical}.{name}"
            local = _alias_name(alias)
            renamed = RENAMED_NAMES.get(keras3_name(full) or syntax.canonical_name(full) or "")
            if renamed is not None:
                parent, last = _split(renamed)
                found.setdefault(parent, []).append(
                    cst.ImportAlias(
                        name=cst.Name(last),
                        asname=None if local == last else cst.AsName(name=cst.Name(local)),
                    )
                )
                ctx.change(line, RULE, f"`{full}` -> `{renamed}`: Keras 3's name of it")
                continue
            flagged = IMPORTABLE_FLAGGED.get(syntax.canonical_name(full) or "")
            if flagged is not None:
                found.setdefault(_COMPAT, []).append(
                    cst.ImportAlias(
                        name=cst.Name(flagged),
                        asname=None if local == flagged else cst.AsName(name=cst.Name(local)),
                    )
                )
                ctx.flag(
                    line,
                    RULE,
                    f"`{full}` does not exist in Keras 3",
                    REMOVED_NAMES[syntax.canonical_name(full) or ""],
                )
                continue
            if full in COMPAT_MODULES:
                why, modern = COMPAT_MODULES[full]
                parent, last = _split(_COMPAT)
            else:
                entry = compat_name(full)
                if entry is None:
                    rest.append(alias)
                    continue
                target, why, modern = entry
                parent, last = _split(f"{_COMPAT}.{target}")
                if last in requirements.TF_KERAS_NAMES:
                    ctx.require_package(requirements.KERAS2_EXTRA)
            found.setdefault(parent, []).append(
                cst.ImportAlias(
                    name=cst.Name(last),
                    asname=None if local == last else cst.AsName(name=cst.Name(local)),
                )
            )
            ctx.compat(line, RULE, f"`{full}` -> `{parent}.{last}`: {why}", modern)
        if not found:
            return None
        new: list[cst.BaseSmallStatement] = []
        if rest:
            rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            remaining = statement.with_changes(names=_commas(rest))
            migrated = self._import_from(ctx, line, remaining)
            new.extend([remaining] if migrated is None else migrated)
        for parent, aliases in found.items():
            new.append(
                cst.ImportFrom(module=syntax.dotted_expression(parent), names=_commas(aliases))
            )
        return new

    def _names_from_moved(self, ctx, line, statement, old_module, target):
        groups: dict[str, list[cst.ImportAlias]] = {}
        dropped = []
        private = []
        merge_removed = False
        called = ctx.facts.keras1_merge_names - ctx.facts.keras1_merge_kept
        for alias in statement.names:
            name = syntax.dotted(alias.name)
            if name in DROPPED_NAMES or (target == "keras.backend" and name in _DROPPED_BACKEND):
                dropped.append(name)
                continue
            if (
                _alias_name(alias) in called
                and keras3_name(f"{old_module}.{name}") == "keras.layers.merge"
            ):
                # `from keras.layers.merge import merge`: as for `from
                # keras.layers import merge`, every call is rewritten.
                merge_removed = True
                ctx.change(
                    line,
                    RULE,
                    f"`from {old_module} import {name}` removed: Keras 1's "
                    "merge() calls become the keras.layers function of their mode",
                )
                continue
            if _flag_without_twin(ctx, line, old_module, name):
                private.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                continue
            submodule = keras3_module(f"{old_module}.{name}")
            if submodule is not None:
                # `from tf.keras.layers.experimental import preprocessing`:
                # a moved module imported by name, bound under its old name.
                parent, last = _split(submodule)
                local = _alias_name(alias)
                groups.setdefault(parent, []).append(
                    cst.ImportAlias(
                        name=cst.Name(last),
                        asname=None if local == last else cst.AsName(name=cst.Name(local)),
                    )
                )
                continue
            home = (keras3_name(f"{old_module}.{name}") or "").rpartition(".")[0] or target
            groups.setdefault(home, []).append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        new = []
        if private:  # Left as it was: the line fails until a person replaces it.
            new.append(statement.with_changes(names=_commas(private)))
        if private and not groups and not dropped:
            return None  # Only private names: the statement stays as it was.
        if merge_removed and not groups and not dropped:
            return new
        for home, aliases in groups.items():
            aliases = [
                alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for alias in aliases[:-1]
            ] + aliases[-1:]
            new.append(cst.ImportFrom(module=syntax.dotted_expression(home), names=aliases))
        message = _moved_names_message(old_module, groups, dropped)
        compat_home = next((home for home in groups if home in _COMPAT_MODULE_WHY), None)
        if compat_home is not None:
            why, modern = _COMPAT_MODULE_WHY[compat_home]
            ctx.compat(line, RULE, f"{message}; {why}", modern)
        else:
            ctx.change(line, RULE, message)
        return new

    def _import(self, ctx, line, statement):
        names = list(statement.names)
        touched = False
        for index, alias in enumerate(names):
            full = syntax.dotted(alias.name)
            fix = _removed_fix(full)
            if fix is not None:  # `import keras.wrappers.scikit_learn`
                ctx.flag(line, RULE, f"`{full}` does not exist in Keras 3", fix)
                return None
            target = keras3_module(full)
            if target is None:
                continue
            touched = True
            # Without an alias, uses spell the legacy path; they are
            # rewritten below, and the new import binds the same root.
            names[index] = alias.with_changes(name=syntax.expression(target))
            ctx.change(
                line,
                RULE,
                f"`import {full}` -> `import {target}`: the module does not exist in Keras 3",
            )
        if not touched:
            return None
        return [statement.with_changes(names=names)]

    def _compat_attribute(self, ctx, original, updated, qualified):
        """`keras.preprocessing.text.Tokenizer` (dotted) -> `parallel_keras.compat.Tokenizer`."""
        if not qualified.startswith(("keras.", "tensorflow.keras.")):
            return None
        renamed = RENAMED_NAMES.get(keras3_name(qualified) or qualified)
        if renamed is not None and isinstance(original.value, (cst.Name, cst.Attribute)):
            text = syntax.dotted(original)
            root = next(
                (r for r in ("keras.", "tf.keras.", "tensorflow.keras.") if text.startswith(r)),
                None,
            )
            if root is not None:  # `keras.objectives.mse` -> `keras.losses.mean_squared_error`
                new = f"{root[: -len('keras.')]}{renamed}"
                ctx.change(original, RULE, f"`{text}` -> `{new}`: Keras 3's name of it")
                return syntax.expression(new)
            new_name = renamed.rpartition(".")[2]
            ctx.change(original, RULE, f"`{text}` -> `.{new_name}`: Keras 3's name of it")
            return updated.with_changes(attr=cst.Name(new_name))
        entry = compat_name(qualified)
        if entry is None or (syntax.canonical_name(qualified) or "").startswith("keras.backend."):
            # `K.function(...)`, `K.get_session()`: their calls are the
            # backend and sessions rules' (imports by name are this rule's).
            return None
        module = ctx.written_qualified_name(original.value) or ""
        if isinstance(original.value, cst.Name) and syntax.canonical_name(module) in COMPAT_MODULES:
            return updated  # `text.Tokenizer`: `text` is parallel_keras.compat now.
        target, why, modern = entry
        new = f"{_COMPAT}.{target}"
        ctx.require_import("parallel_keras")
        if target in requirements.TF_KERAS_NAMES:
            ctx.require_package(requirements.KERAS2_EXTRA)
        ctx.compat(original, RULE, f"`{syntax.dotted(original)}` -> `{new}`: {why}", modern)
        return syntax.expression(new)

    def leave_Attribute(self, ctx, original, updated):
        # `keras.utils.np_utils.to_categorical` -> `keras.utils.to_categorical`.
        text = syntax.dotted(original)
        if (
            id(original) in self._in_imports
            or id(original) in self._compat_parts
            or id(original) in ctx.facts.removed_decorators
        ):
            return updated
        qualified = ctx.written_qualified_name(original) or ""
        compat = self._compat_attribute(ctx, original, updated, qualified)
        if compat is not None:
            return compat
        fix = _preprocessing_fix(qualified)
        if fix is None and qualified.startswith(("keras.", "tensorflow.keras.")):
            fix = _removed_fix(qualified)  # `keras.utils.io_utils.HDF5Matrix(...)`
        # `keras.preprocessing.text.Tokenizer(...)`: flagged once per line.
        if fix is not None:
            if ctx.line(original) not in self._flagged_lines:
                self._flagged_lines.add(ctx.line(original))
                ctx.flag(original, RULE, f"`{qualified}` does not exist in Keras 3", fix)
            return updated
        if text is None or not isinstance(original.value, cst.Attribute):
            return updated
        module_text = syntax.dotted(original.value)
        roots = [
            root
            for root in ("keras.", "tf.keras.", "tensorflow.keras.")
            if module_text.startswith(root)
        ]
        target = keras3_module(ctx.written_qualified_name(original.value) or module_text)
        if target is None or not roots:
            return updated
        if original.attr.value in DROPPED_NAMES:
            return updated
        if target.startswith(_COMPAT):
            # `keras.utils.conv_utils.normalize_tuple` -> parallel_keras.compat's.
            why, modern = _COMPAT_MODULE_WHY[target]
            new = f"{target}.{original.attr.value}"
            ctx.require_import("parallel_keras")
            ctx.compat(original, RULE, f"`{text}` -> `{new}`: {why}", modern)
            return syntax.expression(new)
        # `tf.keras.layers.experimental.preprocessing.RandomFlip` ->
        # `tf.keras.layers.RandomFlip`: the script's own root stays bound.
        new = f"{roots[0][: -len('keras.')]}{target}.{original.attr.value}"
        ctx.change(original, RULE, f"`{text}` -> `{new}`: the module does not exist in Keras 3")
        return syntax.expression(new)


AUDIT: list[tuple] = [
    *(
        (f"{old}.*", f"{new}.*", "the module does not exist in Keras 3")
        for old, new in sorted(MOVED_MODULES.items())
        if new not in _COMPAT_MODULE_WHY
    ),
    *(
        (f"{old}.*", f"{new}.*", *_COMPAT_MODULE_WHY[new])
        for old, new in sorted(MOVED_MODULES.items())
        if new in _COMPAT_MODULE_WHY
    ),
    *(
        (name, f"{_COMPAT}.{target}", why, modern)
        for name, (target, why, modern) in sorted(COMPAT_NAMES.items())
    ),
    *(
        (old, new, "Keras 3 spells the same function out")
        for old, new in sorted(RENAMED_NAMES.items())
    ),
    *(
        (f"{name}.*", f"{_COMPAT}.*", why, modern)
        for name, (why, modern) in sorted(COMPAT_MODULES.items())
    ),
    *(
        (
            f"{root}.<module>",
            "keras.<module>",
            "TensorFlow's copy of Keras 2; the Keras 3 module of the same name (flagged "
            "when Keras 3 has none)",
        )
        for root in TF_KERAS_PATHS
    ),
    *(
        (f"{name}.*" if name.count(".") == 2 else name, None, fix)
        for name, fix in sorted(PREPROCESSING_FLAGS.items())
        if name not in COMPAT_NAMES and name not in COMPAT_MODULES
    ),
    (
        "keras.preprocessing.sequence.pad_sequences",
        "(kept)",
        "Keras 3 still has it (also as keras.utils.pad_sequences)",
    ),
    *(
        (
            f"keras.backend.{name}",
            "(import dropped)",
            "TF1 session helper; its uses are rewritten by the sessions/GPU-count rules",
        )
        for name in sorted(DROPPED_NAMES)
    ),
    *(
        (
            f"from keras.backend import {name}",
            "(import dropped)",
            f"its calls become parallel_keras.compat.{name}(...) (rules/backend_ops.py)",
        )
        for name in sorted(_DROPPED_BACKEND - DROPPED_NAMES)
    ),
    *((f"{module}.*", None, fix) for module, fix in sorted(GONE_MODULES.items())),
    *((name, None, fix) for name, fix in sorted(REMOVED_NAMES.items()) if name not in COMPAT_NAMES),
    ("from keras.<module> import _private (any Keras module)", None, _PRIVATE_ACTION),
]
