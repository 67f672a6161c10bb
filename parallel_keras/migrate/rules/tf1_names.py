# SPDX-License-Identifier: Apache-2.0
"""Rewrite: TF1 names (`tf.log`, `tf.set_random_seed`, `tf.to_float`, ...) -> TF 2.

TensorFlow's own upgrade tool (`tf_upgrade_v2`) holds the table of TF1 names
and what TF 2 calls them; `tf1_table.py` is that data, generated from the
installed TensorFlow (see its docstring). Here it is applied:

* a plain rename (`tf.log` -> `tf.math.log`, `tf.matrix_band_part` ->
  `tf.linalg.band_part`) is the same function under a new name, so it is
  rewritten;
* a call whose arguments TF 2 renamed or reordered (`tf.reduce_sum(x,
  keep_dims=True)`, `tf.argmax(x, dimension=1)`, `tf.space_to_depth(x, 2,
  'n')`) gets its TF1 positional slots passed by their TF1 keyword and the
  keywords renamed, as tf_upgrade_v2 does (an argument TF 2 removed is
  flagged); `tf.nn.dropout(keep_prob=p)` becomes `rate=1 - p` and
  `softmax_cross_entropy_with_logits(labels=y)` stops the gradient into `y`,
  as TF1 did;
* a name TF 2 keeps only as `tf.compat.v1.X` is flagged with the TF 2 way,
  except the few whose `tf.compat.v1` (or TF 2) form is known to compute the
  same thing eagerly, listed in `_EXACT` with why. The rest are flagged
  rather than moved to `tf.compat.v1` because most of them build graphs,
  read collections or need a session (`tf.placeholder`, `tf.Summary` with
  `FileWriter`, `tf.train.*Optimizer` which Keras 3's `compile` rejects):
  the rename would turn an error at import into one later, or into code that
  silently does nothing.

Names TF 2 still has as a different function (`tf.debugging.assert_equal`,
`tf.initializers.he_normal`, `tf.nn.ctc_loss`) are left alone: a TF 2 script
uses them as they are, and a TF1 call with the old arguments fails loudly.

TF1 session and GPU-option names (`tf.Session`, `tf.ConfigProto`, ...) belong
to the sessions rule and are left to it.

Self-contained TF1 graph code is the exception to the flags: a class that
builds `tf.placeholder`s and runs them with its own session
(`sess.run(..., feed_dict=...)`, e.g. box post-processing), and uses no
Keras, keeps its TF1 names under `tf.compat.v1` and gets
`@parallel_keras.compat.tf1_graph`, which runs its methods in a `tf.Graph`
of its own, where those names build the graph they did in TF1.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import tf1_table

RULE = "TF1 names"

# Owned by the sessions and GPU-count rules.
_ELSEWHERE = frozenset(
    {
        "tf.Session",
        "tf.InteractiveSession",
        "tf.ConfigProto",
        "tf.GPUOptions",
        "tf.global_variables_initializer",
        "tf.local_variables_initializer",
        "tf.train.Server",
        "tf.get_default_session",
    }
)
_CASTS = {
    "tf.to_float": "float32",
    "tf.to_double": "float64",
    "tf.to_int32": "int32",
    "tf.to_int64": "int64",
    "tf.to_bfloat16": "bfloat16",
    "tf.to_complex64": "complex64",
    "tf.to_complex128": "complex128",
}
# TF1 name -> (TF 2 name, why the result computes the same thing eagerly).
# tf.contrib.data's functions that TF 1.13+ moved, unchanged, into tf.data.experimental
# (tf_upgrade_v2 renamed them; each exists there in TF 2.16-2.21).
_CONTRIB_DATA = (
    "AUTOTUNE",
    "Counter",
    "CsvDataset",
    "Reducer",
    "TFRecordWriter",
    "bucket_by_sequence_length",
    "choose_from_datasets",
    "copy_to_device",
    "dense_to_sparse_batch",
    "enumerate_dataset",
    "get_single_element",
    "group_by_reducer",
    "group_by_window",
    "ignore_errors",
    "make_csv_dataset",
    "map_and_batch",
    "parallel_interleave",
    "prefetch_to_device",
    "rejection_resample",
    "sample_from_datasets",
    "scan",
    "shuffle_and_repeat",
    "unbatch",
)
# tf.contrib.data modules imported by name -> the TF 2 module holding their functions.
CONTRIB_DATA_MODULES = {
    "tf.contrib.data": "tf.data.experimental",
    "tf.contrib.data.python.ops.prefetching_ops": "tf.data.experimental",
    "tf.contrib.data.python.ops.batching": "tf.data.experimental",
    "tf.contrib.data.python.ops.shuffle_ops": "tf.data.experimental",
    "tf.contrib.data.python.ops.interleave_ops": "tf.data.experimental",
}
_EXACT = {
    **{
        f"tf.contrib.data.{name}": (
            f"tf.data.experimental.{name}",
            "tf.contrib.data's function, moved unchanged into tf.data.experimental",
        )
        for name in _CONTRIB_DATA
    },
    "tf.set_random_seed": (
        "tf.random.set_seed",
        "TF 2's name of the global seed; Keras 3 initializers draw their seeds "
        "from Python's `random`, so seed that too (keras.utils.set_random_seed) "
        "for reproducible weights",
    ),
    "tf.random.set_random_seed": ("tf.random.set_seed", "TF 2's name of the global seed"),
    "tf.assign": ("tf.compat.v1.assign", "on a tf.Variable it calls variable.assign, eagerly"),
    "tf.assign_add": (
        "tf.compat.v1.assign_add",
        "on a tf.Variable it calls variable.assign_add, eagerly",
    ),
    "tf.assign_sub": (
        "tf.compat.v1.assign_sub",
        "on a tf.Variable it calls variable.assign_sub, eagerly",
    ),
    "tf.div": (
        "tf.compat.v1.div",
        "keeps TF1's Python 2 division (integer inputs floor-divide); an eager op",
    ),
    "tf.py_func": ("tf.compat.v1.py_func", "runs the Python function eagerly too"),
    "tf.setdiff1d": ("tf.compat.v1.setdiff1d", "an eager op"),
    "tf.sparse_to_dense": ("tf.compat.v1.sparse_to_dense", "an eager op"),
    "tf.get_seed": ("tf.compat.v1.get_seed", "reads the global seed; works eagerly"),
}
_TF1_GRAPH = "parallel_keras.compat.tf1_graph"
_GRAPH_MODERN = (
    "write the computation as eager TF 2 code (or a tf.function) of its inputs, "
    "without placeholders and sessions"
)
# tf.compat.v1 modules TF 2.16+ no longer fills (they came from Keras 2): a
# graph class using them stays flagged (tests/migrate/test_tf1_names.py).
_NOT_IN_COMPAT_V1 = ("tf.layers.", "tf.nn.rnn_cell.", "tf.tpu.experimental.")
# TF1 names flagged by default that run eagerly with TF1's meaning on a
# compatibility path: name -> (what it becomes, why, the modern form).
# TF1 names whose TF 2 name a second run would read as another TF1 function:
# the first run writes the name tf.compat.v1 keeps for them, so that running
# migrate twice changes nothing.
_SECOND_RUN_SAFE = {
    "tf.nn.softmax_cross_entropy_with_logits_v2": (
        "tf.compat.v1.nn.softmax_cross_entropy_with_logits_v2",
        "the same function, under the name tf.compat.v1 keeps: its TF 2 name, "
        "tf.nn.softmax_cross_entropy_with_logits, is also TF1's function without a "
        "gradient into the labels, which migrate reads it as",
        "tf.nn.softmax_cross_entropy_with_logits(labels=..., logits=...) (the same "
        "function in TF 2)",
    ),
}
_EAGER_COMPAT = {
    **_SECOND_RUN_SAFE,
    "tf.Summary": (
        "tf.compat.v1.Summary",
        "the same protocol buffer, built eagerly",
        "tf.summary.scalar(tag, value, step=step) inside `with writer.as_default():`",
    ),
    "tf.summary.FileWriter": (
        "parallel_keras.compat.FileWriter",
        "writes the same Summary protos into a TF 2 event file (TF1's writer refuses eager mode)",
        "w = tf.summary.create_file_writer(logdir) and tf.summary.scalar(..., step=...) "
        "inside `with w.as_default():`",
    ),
    # TF1's resize ops: TF 2's tf.image.resize samples at half-pixel centres,
    # TF1's at the corners' grid (other numbers); tf.compat.v1 keeps TF1's.
    **{
        f"tf.image.{name}": (
            f"tf.compat.v1.image.{name}",
            "TF1's own op, sampling as TF1 did (tf.image.resize samples at "
            "half-pixel centres: other numbers); it runs eagerly and in Lambda layers",
            f"tf.image.resize(images, size, method='{method}') (half-pixel centres: "
            "retrain or check the numbers)",
        )
        for name, method in (
            ("resize_bilinear", "bilinear"),
            ("resize_nearest_neighbor", "nearest"),
            ("resize_bicubic", "bicubic"),
            ("resize_area", "area"),
        )
    },
    # TF1's initializer classes: tf.compat.v1 keeps the same objects, which draw
    # eagerly and take TF1's (shape, dtype, partition_info) call that projects'
    # own initializers pass on; Keras 3 layers call them as kernel_initializer.
    **{
        f"tf.{name}_initializer": (
            f"tf.compat.v1.{name}_initializer",
            "the same TF1 initializer object; it draws eagerly and takes TF1's "
            "(shape, dtype, partition_info) call",
            f"keras.initializers.{modern}(seed=...)",
        )
        for name, modern in (
            ("glorot_normal", "GlorotNormal"),
            ("glorot_uniform", "GlorotUniform"),
            ("truncated_normal", "TruncatedNormal"),
            ("variance_scaling", "VarianceScaling"),
            ("orthogonal", "Orthogonal"),
            ("uniform_unit_scaling", "VarianceScaling(distribution='uniform')"),
        )
    },
}
# Keras names a self-contained TF1 class may use: its session, rewritten too.
_GRAPH_SESSION_HELPERS = frozenset({"keras.backend.get_session", "keras.backend.set_session"})
_LOGGING_REASON = "TF1's logging module is kept as tf.compat.v1.logging (absl logging; no graph)"

# Modules TF 2.21 no longer has at all (tf_upgrade_v2's module warnings, and
# what Keras 3 took with it).
_REMOVED_MODULES = tuple(
    sorted(
        {
            "tf.layers",
            "tf.contrib",
            "tf.flags",
            "tf.app",
            "tf.estimator",
            *tf1_table.REMOVED_MODULES,
        },
        key=len,
        reverse=True,
    )
)

_KERAS_FIX = "write it with Keras 3 (keras.layers, keras.losses, keras.metrics, keras.optimizers)"
# TF1 name or module prefix -> the TF 2 way, for the flags.
_FIXES = {
    "tf.placeholder": "use keras.Input(shape=...) for a model input, or pass tensors "
    "directly (TF 2 runs eagerly: there is nothing to feed).",
    "tf.sparse_placeholder": "use keras.Input(shape=..., sparse=True).",
    "tf.placeholder_with_default": "pass the default value directly.",
    "tf.Summary": "write summaries with w = tf.summary.create_file_writer(logdir); "
    "with w.as_default(): tf.summary.scalar(name, value, step=step).",
    "tf.summary.FileWriter": "use tf.summary.create_file_writer(logdir) and "
    "tf.summary.scalar(..., step=...) inside `with writer.as_default():`.",
    "tf.train.": "use the keras.optimizers class of the same name (Keras 3's compile "
    "rejects TF1 optimizers), or keras.callbacks.ModelCheckpoint / tf.train.Checkpoint "
    "for Saver, or tf.data for input queues.",
    "tf.get_default_graph": "delete it: TF 2 runs eagerly, with no default graph; "
    "call the model directly.",
    "tf.reset_default_graph": "use keras.backend.clear_session().",
    "tf.trainable_variables": "use model.trainable_variables.",
    "tf.global_variables": "use model.variables.",
    "tf.local_variables": "use model.non_trainable_variables.",
    "tf.get_variable": "create the weight with self.add_weight(...) in a layer's build, "
    "or tf.Variable(...).",
    "tf.variable_scope": "delete the scope (Keras 3 layers own their weights; name "
    "layers with name=...).",
    "tf.get_collection": "use model.losses / model.variables instead of graph collections.",
    "tf.GraphKeys": "use model.losses / model.variables instead of graph collections.",
    "tf.add_to_collection": "return the value instead, or use layer.add_loss(...).",
    "tf.disable_eager_execution": "delete it: Keras 3 needs eager execution.",
    "tf.disable_v2_behavior": "delete it: Keras 3 needs TF 2 behaviour.",
    "tf.enable_eager_execution": "delete it: TF 2 runs eagerly by default.",
    "tf.Print": "use tf.print(...) (it prints and returns nothing: keep using the tensor itself).",
    "tf.layers.": _KERAS_FIX + "; tf.layers are gone with Keras 2.",
    "tf.losses.": "use the keras.losses function or class of the same meaning.",
    "tf.metrics.": "use the keras.metrics class of the same meaning.",
    "tf.initializers.": "use keras.initializers (e.g. keras.initializers.HeNormal()).",
    "tf.nn.rnn_cell.": "use keras.layers.LSTMCell/GRUCell/SimpleRNNCell in keras.layers.RNN.",
    "tf.nn.dynamic_rnn": "use keras.layers.RNN (or LSTM/GRU) on the sequence.",
    "tf.nn.static_rnn": "use keras.layers.RNN (or LSTM/GRU) on the sequence.",
    "tf.nn.bidirectional_dynamic_rnn": "use keras.layers.Bidirectional around keras.layers.LSTM.",
    "tf.flags.": "use argparse or absl.flags.",
    "tf.app.flags.": "use argparse or absl.flags.",
    "tf.app.": "call your main function directly (or absl.app.run); flags: argparse or absl.flags.",
    "tf.estimator.": "TF 2.16 removed tf.estimator: train with Keras 3 model.fit.",
    "tf.contrib.": "tf.contrib was removed in TF 2: use the TF 2 / Keras 3 API named in "
    "https://www.tensorflow.org/guide/migrate (or TensorFlow Addons' successor).",
}


_GRAPH_MODE_SWITCHES = frozenset(
    {
        "tensorflow.compat.v1.disable_v2_behavior",
        "tensorflow.compat.v1.disable_eager_execution",
    }
)


def _fix(name: str) -> str:
    if name in _FIXES:
        return _FIXES[name]
    for prefix, fix in _FIXES.items():
        if prefix.endswith(".") and name.startswith(prefix):
            return fix
    # The note is re-read by the next run from wrapped comment lines, so the
    # long `tf.compat.v1.<name>` is not spelled out (a wrapped word would split).
    if tf1_table.COMPAT_ONLY.get(name):
        return (
            "TF 2 keeps it only under tf.compat.v1 (the same name after "
            "`tf.compat.v1.`), which its own docs say does not work eagerly: rewrite "
            "this part as eager TF 2 / Keras 3 code "
            "(https://www.tensorflow.org/guide/migrate)."
        )
    return (
        "use the TF 2 API of the same meaning; tf.compat.v1 keeps the TF1 function "
        "under the same name, correct only where it needs no graph, collection or "
        "session (https://www.tensorflow.org/guide/migrate)."
    )


def lookup(name: str) -> tuple[str, str | None, str] | None:
    """What becomes of a TF1 name: (kind, TF 2 name or None, reason).

    Args:
        name: A name spelled from the `tf.` root, e.g. `"tf.log"`.

    Returns:
        None when the name is TF 2 as it is (or another rule's).
    """
    if name in _ELSEWHERE:
        return None
    module, _, function = name.rpartition(".")
    if module != "tf.contrib.data" and module in CONTRIB_DATA_MODULES and function in _CONTRIB_DATA:
        return None  # Through its module imported by name: that import is rewritten.
    if name in _CASTS:
        return ("cast", "tf.cast", f"TF 2 removed it; it was tf.cast(x, tf.{_CASTS[name]})")
    if name in _EXACT:
        new, reason = _EXACT[name]
        return ("rename", new, reason)
    if name in _SECOND_RUN_SAFE:
        return ("compat", None, _SECOND_RUN_SAFE[name][1])
    if name.startswith("tf.logging.") and name in tf1_table.COMPAT_ONLY:
        return ("rename", "tf.compat.v1." + name[len("tf.") :], _LOGGING_REASON)
    if name in tf1_table.RENAMES:
        return (
            "rename",
            tf1_table.RENAMES[name],
            "the same function under its TF 2 name (tf_upgrade_v2's table)",
        )
    if name in tf1_table.ARGS_CHANGED:
        return (
            "keywords",
            tf1_table.ARGS_CHANGED[name],
            "TF 2 renamed or reordered its arguments (tf_upgrade_v2's table)",
        )
    if name in tf1_table.COMPAT_ONLY or name in _FIXES:
        return ("flag", None, _fix(name))
    for module in _REMOVED_MODULES:
        if name == module or name.startswith(module + "."):
            return ("flag", None, _fix(module + "."))
    return None


def _tf_name(ctx: context.Context, node: cst.CSTNode) -> str | None:
    """`"tf.x.y"` for a use of `tensorflow.x.y`; None under `tf.compat.v1` or elsewhere."""
    names = ctx.qualified_names(node)
    full: str | None
    if names:
        full = min(name.name for name in names)
    else:
        full = syntax.fallback_name(node)
    if full is not None and full.startswith("keras.backend.tf."):
        # Keras 2's backend module imported tensorflow as tf: `K.tf.image...`.
        full = "tensorflow." + full[len("keras.backend.tf.") :]
    if full is None or not full.startswith("tensorflow."):
        return None
    if full in _GRAPH_MODE_SWITCHES:
        # Under `import tensorflow.compat.v1 as tf` too: Keras 3 needs eager mode.
        return "tf." + full.rpartition(".")[2]
    if full.startswith(("tensorflow.compat.", "tensorflow.keras.", "tensorflow.python.")):
        return None
    return "tf." + full[len("tensorflow.") :]


def _root(ctx: context.Context, node: cst.CSTNode) -> str:
    """The name the rewrite spells TensorFlow with: `tf` of `tf.log`; for `K.tf.log`, tf's."""
    dotted = syntax.dotted(node) or ""
    if (ctx.qualified_name(node) or "").startswith("keras.backend.tf."):
        return ctx.tf_module()
    return dotted.split(".")[0]


def _cast(ctx, original, updated, name, reason, root):
    """`tf.to_float(x)` -> `tf.cast(x, tf.float32)`; flagged when the call has more than x."""
    positional = syntax.positional(updated)
    if (
        syntax.has_star(updated)
        or len(positional) != 1
        or any(arg.keyword is not None and arg.keyword.value != "name" for arg in updated.args)
    ):
        ctx.flag(
            original,
            RULE,
            f"`{name}` was removed in TF 2",
            f"use {root}.cast(x, {root}.{_CASTS[name]}).",
        )
        return updated
    ctx.change(original, RULE, f"`{name}(x)` -> `{root}.cast(x, {root}.{_CASTS[name]})`: " + reason)
    args = [positional[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]
    args.append(cst.Arg(syntax.expression(f"{root}.{_CASTS[name]}")))
    rest = [arg for arg in updated.args if arg is not positional[0]]
    if rest:
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return updated.with_changes(func=syntax.expression(f"{root}.cast"), args=[*args, *rest])


class Tf1NameRule(context.Rule):
    """`tf.log(x)` -> `tf.math.log(x)`; `tf.placeholder(...)` flagged with the TF 2 way."""

    name = RULE
    reads = {"handled_calls": context.Phase.REWRITE}

    def __init__(self):
        self._inner: set[int] = set()  # Attribute chains inside a matched one.
        self._matched: dict[int, tuple[str, tuple[str, str | None, str]]] = {}
        self._flagged: set[tuple[int, str]] = set()
        self._call_funcs: set[int] = set()
        # Classes of self-contained TF1 graph code, and the attributes in them.
        self._graph_classes: set[int] = set()
        self._graph_attributes: set[int] = set()

    def visit_ClassDef(self, ctx, node):
        attributes = m.findall(node, m.Attribute())
        names = {_tf_name(ctx, attribute) for attribute in attributes}
        feeds = any(
            isinstance(call, cst.Call)
            and syntax.method_name(call) == "run"
            and syntax.keyword(call, "feed_dict") is not None
            for call in m.findall(node, m.Call())
        )
        uses_keras = any(
            (ctx.qualified_name(attribute) or "").startswith("keras.")
            and ctx.qualified_name(attribute) not in _GRAPH_SESSION_HELPERS
            for attribute in attributes
        )
        if "tf.placeholder" in names and feeds and not uses_keras:
            self._graph_classes.add(id(node))
            self._graph_attributes.update(id(attribute) for attribute in attributes)

    def leave_ClassDef(self, ctx, original, updated):
        if id(original) not in self._graph_classes:
            return updated
        if any(
            syntax.dotted(decorator.decorator) == _TF1_GRAPH for decorator in updated.decorators
        ):
            return updated
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"`class {original.name.value}` builds TF1 placeholders and runs them with its "
            f"own session: `@{_TF1_GRAPH}` runs its methods in a tf.Graph of its own",
            _GRAPH_MODERN,
        )
        return updated.with_changes(
            decorators=[*updated.decorators, cst.Decorator(syntax.expression(_TF1_GRAPH))]
        )

    def visit_Call(self, ctx, node):
        self._call_funcs.add(id(node.func))

    def _skip_imports(self, node):
        for attribute in _attributes(node):
            self._inner.add(id(attribute))

    def visit_Import(self, ctx, node):
        self._skip_imports(node)

    def visit_ImportFrom(self, ctx, node):
        self._skip_imports(node)

    def leave_ImportFrom(self, ctx, original, updated):
        # `from tensorflow import set_random_seed`: the import itself fails in TF 2.
        if original.module is None or isinstance(original.names, cst.ImportStar):
            return updated
        module = syntax.dotted(original.module) or ""
        if (
            module != "tensorflow"
            and not module.startswith("tensorflow.")
            or module.startswith(("tensorflow.compat", "tensorflow.keras", "tensorflow.python"))
        ):
            return updated
        moved = _contrib_data_module_import(ctx, original, updated, module)
        if moved is not None:
            return moved
        for alias in original.names:
            name = "tf." + module[len("tensorflow.") :] + "." if module != "tensorflow" else "tf."
            name += syntax.dotted(alias.name)
            found = lookup(name)
            if found is None:
                continue
            kind, new, reason = found
            target = new if kind in ("rename", "keywords") and new else None
            if kind == "cast":
                target = "tf.cast"
            ctx.flag(
                original,
                RULE,
                f"`{name}` is imported by name and does not exist in TF 2",
                f"import tensorflow as tf and call {target} ({reason})." if target else reason,
            )
        return updated

    def visit_Attribute(self, ctx, node):
        if id(node) in self._inner:
            return
        name = _tf_name(ctx, node)
        found = lookup(name) if name else None
        if name is None or found is None:
            return
        self._matched[id(node)] = (name, found)
        value = node.value
        while isinstance(value, cst.Attribute):
            self._inner.add(id(value))
            value = value.value

    def _unmatched_call(self, ctx, original, updated):
        """A call of a TF name the scan did not match: TF1 arguments, whole-call transforms."""
        name = _tf_name(ctx, original.func) if isinstance(original.func, cst.Attribute) else None
        if name in _TRANSFORMS:
            updated = _TRANSFORMS[name](ctx, original, updated)
        if name in tf1_table.POSITIONAL_NAMES or name in tf1_table.KEYWORD_RENAMES:
            fixed = self._arguments(ctx, original, updated, name)
            if fixed is not None and fixed is not updated:
                ctx.change(
                    original,
                    RULE,
                    f"`{name}`: TF1 arguments passed as TF 2 reads them (tf_upgrade_v2's table)",
                )
                return fixed
        return updated

    def leave_Call(self, ctx, original, updated):
        if id(original) in ctx.facts.handled_calls and id(original.func) in ctx.facts.handled_calls:
            return updated  # Another rule's (a placeholder given to target_tensors).
        match = self._matched.get(id(original.func))
        if match is None:
            return self._unmatched_call(ctx, original, updated)
        name, (kind, new, reason) = match
        if new is None:  # A flag: leave_Attribute reports it.
            return updated
        root = _root(ctx, original.func)
        if kind == "cast":
            return _cast(ctx, original, updated, name, reason, root)
        if kind == "rename" and _takes_args(new):
            if _ambiguous(updated, new):
                ctx.flag(
                    original,
                    RULE,
                    f"`{name}` is `{new}` in TF 2, whose arguments differ from TF1's",
                    f"call {new} with its TF 2 arguments, by keyword.",
                )
                return updated
            ctx.change(original, RULE, f"`{name}` -> `{new}`: {reason}")
            return updated.with_changes(func=_spelled(new, root))
        if kind == "keywords":
            fixed = self._arguments(ctx, original, updated, name)
            if fixed is None:
                return updated
            if _ambiguous(fixed, new):
                ctx.flag(
                    original,
                    RULE,
                    f"`{name}` is `{new}` in TF 2, whose arguments differ from TF1's",
                    f"call {new} with its TF 2 arguments, by keyword.",
                )
                return updated
            ctx.change(original, RULE, f"`{name}` -> `{new}`: {reason}, passed as TF 2 reads them")
            return fixed.with_changes(func=_spelled(new, root))
        return updated

    def _arguments(self, ctx, original, updated, name):
        """TF1 positional slots by keyword and TF1 keywords renamed; None when flagged."""
        fixed, problem = _convert(updated, name)
        if problem is not None:
            ctx.flag(original, RULE, f"`{name}`: {problem[0]}", problem[1])
            return None
        return fixed

    def leave_Attribute(self, ctx, original, updated):
        match = self._matched.get(id(original))
        if match is None or id(original) in ctx.facts.handled_calls:
            return updated  # Not a TF1 name, or another rule's (target_tensors).
        name, (kind, new, reason) = match
        if kind in ("cast", "keywords") or (
            kind == "rename" and _takes_args(new) and id(original) in self._call_funcs
        ):
            return updated  # The call is rewritten (or flagged) in leave_Call.
        root = _root(ctx, original) if syntax.dotted(original) else "tf"
        if (
            new is None
            and id(original) in self._graph_attributes
            and name in tf1_table.COMPAT_ONLY
            and not name.startswith(_NOT_IN_COMPAT_V1)
        ):
            compat_name = f"{root}.compat.v1.{name[len('tf.') :]}"
            ctx.compat(
                original,
                RULE,
                f"`{name}` -> `{compat_name}`: TF1 graph code, run in a graph of its own",
                _GRAPH_MODERN,
            )
            return syntax.expression(compat_name)
        if new is None and name in _EAGER_COMPAT:
            target, why, modern = _EAGER_COMPAT[name]
            if target.startswith("parallel_keras."):
                ctx.require_import("parallel_keras")
            else:
                target = f"{root}.{target[len('tf.') :]}"
            ctx.compat(original, RULE, f"`{name}` -> `{target}`: {why}", modern)
            return syntax.expression(target)
        if new is None:  # A flag: no TF 2 name.
            key = (ctx.line(original), name)
            if key not in self._flagged:  # `tf.Summary(value=[tf.Summary.Value(...)])`
                self._flagged.add(key)
                ctx.flag(original, RULE, f"`{name}` does not exist in TF 2", reason)
            return updated
        ctx.change(original, RULE, f"`{name}` -> `{new}`: {reason}")
        return _spelled(new, root)


def _takes_args(name: str | None) -> bool:
    return name in tf1_table.POSITIONAL_NAMES or name in tf1_table.KEYWORD_RENAMES


def _convert(call: cst.Call, name: str) -> tuple[cst.Call, tuple[str, str] | None]:
    """`call` of TF1 `name` with its arguments as TF 2 reads them, or the problem."""
    order = tf1_table.POSITIONAL_NAMES.get(name, [])
    renames = tf1_table.KEYWORD_RENAMES.get(name, {})
    if syntax.has_star(call):
        return call, (
            "TF 2 renamed or reordered its arguments, and this call passes *args/**kwargs",
            "pass the arguments by their TF 2 keywords.",
        )
    args = []
    position = 0
    for arg in call.args:
        if arg.keyword is None:
            if order and position >= len(order):
                return call, (
                    "more positional arguments than TF1 had",
                    "pass the arguments by their TF 2 keywords.",
                )
            slot = order[position] if position < len(order) else None
            position += 1
            if slot is not None:
                arg = arg.with_changes(
                    keyword=cst.Name(slot),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
        if arg.keyword is not None and arg.keyword.value in renames:
            new_keyword = renames[arg.keyword.value]
            if new_keyword is None:
                return call, (
                    f"TF 2 removed the argument {arg.keyword.value}=",
                    f"delete {arg.keyword.value}= and check that the TF 2 "
                    "behaviour is what the script needs.",
                )
            arg = arg.with_changes(keyword=cst.Name(new_keyword))
        args.append(arg)
    if all(
        a.keyword is b.keyword or (a.keyword and b.keyword and a.keyword.value == b.keyword.value)
        for a, b in zip(args, call.args)
    ):
        return call, None
    return call.with_changes(args=args), None


def _ambiguous(call: cst.Call, target: str) -> bool:
    """Whether `target`'s own TF1 table would read the rewritten call again differently.

    TF's tables key TF1 names, and some TF 2 names are TF1 names too
    (`tf.space_to_batch_nd` -> `tf.space_to_batch`): such a rewrite is made
    only when a second run would leave it as it is.
    """
    if not _takes_args(target):
        return False
    converted, problem = _convert(call, target)
    return problem is not None or converted is not call


def _dropout(ctx, original, updated):
    """TF1 `tf.nn.dropout(x, keep_prob)`: TF 2's second argument is the drop `rate`."""
    keep = syntax.keyword(updated, "keep_prob")
    positional = syntax.positional(updated)
    if keep is not None and syntax.keyword(updated, "rate") is None:
        ctx.change(
            original,
            RULE,
            "`tf.nn.dropout(keep_prob=p)` -> `rate=1 - p`: TF 2 "
            "removed keep_prob (tf_upgrade_v2 does the same)",
        )
        return updated.with_changes(
            args=[
                arg.with_changes(
                    keyword=cst.Name("rate"),
                    value=syntax.expression(f"1 - ({syntax.code(arg.value)})"),
                )
                if arg is keep
                else arg
                for arg in updated.args
            ]
        )
    if len(positional) > 1 and not syntax.has_star(updated):
        ctx.flag(
            original,
            RULE,
            "`tf.nn.dropout(x, p)`: TF1's second argument was keep_prob, TF 2's is the drop rate",
            "if this line was written for TF1, pass rate=1 - p by keyword; if for "
            "TF 2, pass rate=p by keyword (either silences this note).",
        )
    return updated


def _softmax_xent(ctx, original, updated):
    """TF1's softmax_cross_entropy_with_logits did not backprop into the labels."""
    labels = syntax.keyword(updated, "labels")
    if labels is None or syntax.has_star(updated):
        return updated
    if isinstance(labels.value, cst.Call) and (syntax.dotted(labels.value.func) or "").endswith(
        "stop_gradient"
    ):
        return updated
    root = _root(ctx, original.func)
    ctx.change(
        original,
        RULE,
        "`tf.nn.softmax_cross_entropy_with_logits(labels=y)` -> "
        "`labels=tf.stop_gradient(y)`: the TF1 function did not backprop into the "
        "labels; TF 2's does (tf_upgrade_v2 does the same)",
    )
    return updated.with_changes(
        args=[
            arg.with_changes(
                value=syntax.expression(f"{root}.stop_gradient({syntax.code(arg.value)})")
            )
            if arg is labels
            else arg
            for arg in updated.args
        ]
    )


# TF 2 names whose TF1 calls mean something else: name -> rewrite.
_TRANSFORMS = {
    "tf.nn.dropout": _dropout,
    "tf.nn.softmax_cross_entropy_with_logits": _softmax_xent,
}


def _spelled(name: str, root: str) -> cst.BaseExpression:
    return syntax.expression(root + name[len("tf") :])


def _attributes(node: cst.CSTNode) -> list[cst.Attribute]:
    found = []

    class _Collect(cst.CSTVisitor):
        def visit_Attribute(self, attribute):
            found.append(attribute)

    node.visit(_Collect())
    return found


def _audit() -> list[tuple]:
    rows: list[tuple] = [
        (
            "tf.<TF1 graph name> in a class that feeds its own placeholders (sess.run("
            "..., feed_dict=...)) and uses no Keras",
            "@parallel_keras.compat.tf1_graph on the class; the name under tf.compat.v1",
            "TF1 graph code, run in a tf.Graph of its own with a tf.compat.v1 session",
            _GRAPH_MODERN,
        ),
        *((name, target, why, modern) for name, (target, why, modern) in _EAGER_COMPAT.items()),
    ]
    names = sorted(
        {
            *tf1_table.RENAMES,
            *tf1_table.ARGS_CHANGED,
            *tf1_table.COMPAT_ONLY,
            *_CASTS,
            *_EXACT,
            *(k for k in _FIXES if not k.endswith(".")),
        }
    )
    for name in names:
        found = lookup(name)
        if found is None or name in _EAGER_COMPAT:
            continue
        kind, new, reason = found
        if kind == "cast":
            rows.append((name, f"tf.cast(x, tf.{_CASTS[name]})", reason))
        elif kind == "keywords":
            rows.append((name, new, reason + "; arguments passed by TF 2 keyword"))
        else:
            rows.append((name, new, reason))
    for name in tf1_table.TF2_SAME_NAME:
        rows.append(
            (
                name,
                "(kept)",
                "TF 2 has a function of this name (TF 2 code uses it "
                "as is); tf_upgrade_v2 sends TF1 callers to tf.compat.v1: check the TF 2 "
                "signature",
            )
        )
    for name, renames in sorted(tf1_table.KEYWORD_RENAMES.items()):
        for old, new in sorted(renames.items()):
            rows.append(
                (
                    f"{name}({old}=)",
                    f"{new}=" if new else None,
                    "TF 2 renamed the argument"
                    if new
                    else "TF 2 removed the argument: delete it and check the TF 2 behaviour",
                )
            )
    rows.append(
        (
            "tf.nn.dropout(x, keep_prob=p)",
            "tf.nn.dropout(x, rate=1 - (p))",
            "TF 2 takes the drop rate",
        )
    )
    rows.append(
        (
            "tf.nn.dropout(x, p) (positional)",
            None,
            "TF1 meant keep_prob, TF 2 means rate: pass rate= by keyword",
        )
    )
    rows.append(
        (
            "tf.nn.softmax_cross_entropy_with_logits(labels=y)",
            "labels=tf.stop_gradient(y)",
            "TF1 did not backprop into the labels",
        )
    )
    for module in sorted(_REMOVED_MODULES):
        rows.append((module + ".*", None, _fix(module + ".")))
    return rows


AUDIT = _audit()


def _contrib_data_module_import(ctx, original, updated, module):
    """`from tensorflow.contrib.data.python.ops import prefetching_ops` ->
    `from tensorflow.data import experimental as prefetching_ops` (every name of
    the statement a tf.contrib.data module that TF 2 keeps in tf.data.experimental)."""
    package = "tf." + module[len("tensorflow.") :]
    aliases = []
    for alias in original.names:
        home = CONTRIB_DATA_MODULES.get(f"{package}.{syntax.dotted(alias.name)}")
        if home is None:
            return None
        parent, _, last = ("tensorflow." + home[len("tf.") :]).rpartition(".")
        local = syntax.dotted(alias.asname.name) if alias.asname else syntax.dotted(alias.name)
        aliases.append((parent, last, local))
    if len({parent for parent, _, _ in aliases}) != 1:
        return None
    ctx.change(
        original,
        RULE,
        f"`from {module} import ...` -> `from {aliases[0][0]} import {aliases[0][1]} as ...`: "
        "TF 1.13+ moved tf.contrib.data's functions unchanged into tf.data.experimental",
    )
    names = [
        cst.ImportAlias(
            name=cst.Name(last),
            asname=None if local == last else cst.AsName(name=cst.Name(local)),
        )
        for _, last, local in aliases
    ]
    for index in range(len(names) - 1):
        names[index] = names[index].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return updated.with_changes(module=syntax.dotted_expression(aliases[0][0]), names=names)
