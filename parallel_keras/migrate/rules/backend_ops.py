# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2 backend math (`K.sum`, `K.argmax`, ...) -> `keras.ops`.

Keras 3's `keras.backend` keeps only configuration (`epsilon`, `floatx`,
`image_data_format`, `clear_session`, `get_uid`); the tensor functions custom
losses and metrics were written with (`dice_coef`, `f1`, ...) moved to
`keras.ops`, mostly under the same name, but not always with the same
defaults: `K.argmax(x)` meant `axis=-1`, `keras.ops.argmax(x)` means the
index in the flattened tensor. So every rewrite passes each Keras 2 default
that `keras.ops` changed explicitly (`_OPS` lists them, and
`tests/migrate/test_backend_ops.py` checks that list against both
signatures, Keras 2's extracted from its source). A backend function with
no exact Keras 3 equivalent is flagged with the Keras 3 way.
"""

from __future__ import annotations

import ast
import dataclasses

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "backend ops"


@dataclasses.dataclass(frozen=True)
class Op:
    """How one Keras 2 backend function is written in Keras 3.

    Args:
        target: The Keras 3 function, under the keras module (`ops.sum`).
        renames: Keras 2 keyword -> Keras 3 keyword.
        explicit: (Keras 2 parameter, position, Keras 2 default) passed
            explicitly when the call leaves them out: Keras 3 changed them.
        extra: (keyword, value) always passed: Keras 2 behaviour that is no
            parameter there (`l2_normalize`'s epsilon).
        dropped: Keras 2 keywords without effect on values (`name=`).
        none_means: (Keras 2 parameter, position, value) written instead of
            a literal `None` there: Keras 2 read None as that value
            (`dtype=None`: floatx()), keras.ops reads it otherwise.
    """

    target: str
    renames: tuple[tuple[str, str], ...] = ()
    explicit: tuple[tuple[str, int, str], ...] = ()
    extra: tuple[tuple[str, str], ...] = ()
    dropped: frozenset[str] = frozenset()
    none_means: tuple[tuple[str, int, str], ...] = ()


def _same(names: str, **kwargs) -> dict[str, Op]:
    return {name: Op(f"ops.{name}", **kwargs) for name in names.split()}


_BINARY = (("x", "x1"), ("y", "x2"))
# Keras 2's `dtype=None` meant this.
_FLOATX = "keras.backend.floatx()"
_AXIS_LAST = (("axis", 1, "-1"),)
_DTYPE_NONE = (("dtype", 1, _FLOATX),)
OPS: dict[str, Op] = {
    **_same(
        "sum mean max min prod any all std var abs square exp log round sign "
        "cast squeeze stack transpose softmax sigmoid tanh shape "
        "categorical_crossentropy sparse_categorical_crossentropy "
        "binary_crossentropy"
    ),
    **_same(
        "maximum minimum equal not_equal greater greater_equal less less_equal dot", renames=_BINARY
    ),
    **_same("expand_dims", explicit=_AXIS_LAST),
    # Keras 2 called tf.argmax, whose axis=None is axis 0; keras.ops'
    # axis=None is the index in the flattened tensor.
    **_same("argmax argmin", explicit=_AXIS_LAST, none_means=(("axis", 1, "0"),)),
    **_same("cumsum cumprod", explicit=(("axis", 1, "0"),)),
    # Keras 2: dtype=None meant floatx(); keras.ops: the input's dtype.
    **_same(
        "ones_like zeros_like",
        dropped=frozenset({"name"}),
        explicit=_DTYPE_NONE,
        none_means=_DTYPE_NONE,
    ),
    # Keras 2.2-2.3 TF backend: the same functions, the same defaults.
    **_same("sin cos softplus softsign logsumexp dtype"),
    # tf.nn.embedding_lookup(reference, indices): rows of the first axis.
    "gather": Op("ops.take", renames=(("reference", "x"),), extra=(("axis", "0"),)),
    "tile": Op("ops.tile", renames=(("n", "repeats"),)),
    # Keras 2 cast tf.range's result to dtype='int32'; keras.ops infers it.
    "arange": Op("ops.arange", explicit=(("step", 2, "1"), ("dtype", 3, "'int32'"))),
    # Keras 2's conv2d/conv3d(x, kernel, strides, padding, data_format,
    # dilation_rate): keras.ops.conv's parameters, in the same order, with
    # the same defaults (data_format None: image_data_format()).
    # keras.ops.conv reads an int stride/dilation as that value on every
    # axis; Keras 2's tuple defaults are written out all the same.
    **{
        name: Op(
            "ops.conv",
            renames=(("x", "inputs"),),
            explicit=(("strides", 2, ones), ("dilation_rate", 5, ones)),
        )
        for name, ones in (("conv2d", "(1, 1)"), ("conv3d", "(1, 1, 1)"))
    },
    "clip": Op("ops.clip", renames=(("min_value", "x_min"), ("max_value", "x_max"))),
    "reshape": Op("ops.reshape", renames=(("shape", "newshape"),)),
    "pow": Op("ops.power", renames=(("x", "x1"), ("a", "x2"))),
    "one_hot": Op("ops.one_hot", renames=(("indices", "x"),)),
    "permute_dimensions": Op("ops.transpose", renames=(("pattern", "axes"),)),
    "repeat_elements": Op("ops.repeat", renames=(("rep", "repeats"),)),
    "concatenate": Op("ops.concatenate", renames=(("tensors", "xs"),), explicit=_AXIS_LAST),
    "relu": Op("activations.relu", renames=(("alpha", "negative_slope"),)),
    # tf.nn.l2_normalize: x * rsqrt(max(sum(x**2), 1e-12)); keras.ops.normalize:
    # x * min(rsqrt(sum(x**2)), 1 / epsilon), the same with epsilon = 1e-6.
    "l2_normalize": Op(
        "ops.normalize",
        explicit=(("axis", 1, "None"),),
        extra=(("order", "2"), ("epsilon", "1e-6")),
    ),
    # Keras 2's TF backend drew with TF's stateful ops: new numbers at every
    # step, also inside a compiled train step. keras.random.normal(seed=None)
    # bakes one seed into a compiled function (keras-team/keras#20569) and
    # creates its global seed variable inside the traced step (a ValueError
    # under tf.function), so the rewrite keeps TF's ops.
    "random_normal": Op(
        "tf.random.normal", explicit=(("dtype", 3, _FLOATX),), none_means=(("dtype", 3, _FLOATX),)
    ),
    "random_uniform": Op(
        "tf.random.uniform",
        explicit=(("maxval", 2, "1.0"), ("dtype", 3, _FLOATX)),
        none_means=(("dtype", 3, _FLOATX),),
    ),
}
# Keras 2 parameters before `name` (only for functions that drop it).
_KERAS2_ARITY = {"ones_like": ("x", "dtype"), "zeros_like": ("x", "dtype")}
KEPT = frozenset(
    "clear_session epsilon floatx image_data_format set_epsilon set_floatx "
    "set_image_data_format is_keras_tensor backend get_uid".split()
)
# Handled by other rules (sessions, GPU counts, dim ordering).
_ELSEWHERE = frozenset(
    "set_session get_session _get_available_gpus image_dim_ordering "
    "set_image_dim_ordering tensorflow_backend".split()
)
_ACTIONS = {
    "learning_phase": "delete it; pass training=True/False to the model or layer call.",
    "set_learning_phase": "delete it; pass training=True/False to the model or layer call.",
    "function": "call the model (or a keras.Model of the wanted outputs) directly.",
    "placeholder": (
        "Keras 3 has no placeholders; this one's shape is not in the code (neither "
        "shape= nor a literal ndim=): write keras.Input(batch_shape=<its full shape, "
        "batch axis included>) and feed it through a functional model or "
        "parallel_keras.compat.function."
    ),
    "gradients": (
        "Keras 3 has no symbolic gradients of graph tensors (the WGAN-GP "
        "gradient penalty): compute the penalty in a custom `train_step` with "
        "`with tf.GradientTape() as tape: tape.watch(interpolated); score = "
        "critic(interpolated)` and `tape.gradient(score, interpolated)` "
        "(https://keras.io/examples/generative/wgan_gp/)."
    ),
    "ctc_batch_cost": (
        "Keras 2 took softmax probabilities with the blank as the last class; "
        "write `keras.ops.expand_dims(keras.ops.ctc_loss(y_true, keras.ops.log("
        "y_pred + keras.backend.epsilon()), keras.ops.cast(keras.ops.squeeze("
        "label_length, -1), 'int32'), keras.ops.cast(keras.ops.squeeze("
        "input_length, -1), 'int32'), mask_index=y_pred.shape[-1] - 1), 1)` "
        "with y_pred computed once (a variable)."
    ),
    "hard_sigmoid": (
        "Keras 3's hard_sigmoid is relu6(x + 3) / 6; Keras 2's was "
        "`keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)`: write that."
    ),
    "in_train_phase": "take the layer's `training` argument (`def call(self, inputs, "
    "training=None)`) and write `x if training else alt` (Keras 2 called x and alt "
    "when they were functions: call them in that expression).",
    "in_test_phase": "take the layer's `training` argument (`def call(self, inputs, "
    "training=None)`) and write `alt if training else x`.",
}
# Keras 2 backend functions parallel_keras.compat keeps -> (target, why, modern).
COMPAT_BACKEND = {
    "function": (
        "parallel_keras.compat.function",
        "a Keras 2 backend function: a list of input values -> a list of NumPy "
        "outputs, the learning phase fed as 0/1",
        "keras.Model(inputs, outputs)(x, training=False)",
    ),
    "learning_phase": (
        "parallel_keras.compat.learning_phase",
        "the learning-phase input of parallel_keras.compat.function",
        _ACTIONS["learning_phase"],
    ),
    "set_learning_phase": (
        "parallel_keras.compat.set_learning_phase",
        "the phase parallel_keras.compat.function uses when not fed one",
        _ACTIONS["set_learning_phase"],
    ),
}
_KERAS2_OPS_WHY = "Keras 2's TF-backend function, the same values (keras.ops or TensorFlow)"
# Keras 2 backend functions without a same-meaning keras.ops twin, kept in
# parallel_keras.compat (compat/backend_ops.py) -> (why not keras.ops, modern form).
_KERAS2_OPS = {
    "zeros": (
        "a variable of zeros (K.set_value could change it), not counted among a layer's weights",
        "keras.ops.zeros(shape, dtype) for a constant, or self.add_weight(..., "
        "initializer='zeros', trainable=False) in a layer",
    ),
    "ones": (
        "a variable of ones (K.set_value could change it), not counted among a layer's weights",
        "keras.ops.ones(shape, dtype) for a constant, or self.add_weight(..., "
        "initializer='ones', trainable=False) in a layer",
    ),
    "bias_add": (
        "the bias on the channel axis of data_format (None: image_data_format())",
        "x + bias for channels-last tensors",
    ),
    "conv1d": (
        "keras.ops.conv, with padding='causal' (zeros on the left) as Keras 2 did it",
        "keras.ops.conv(x, kernel, ...), padding x on the left first for a causal one",
    ),
    "temporal_padding": (
        "zeros before/after axis 1",
        "keras.ops.pad(x, [[0, 0], [before, after], [0, 0]])",
    ),
    "spatial_2d_padding": (
        "zeros around the spatial axes of data_format",
        "keras.ops.pad(x, pattern) or a keras.layers.ZeroPadding2D layer",
    ),
    "spatial_3d_padding": (
        "zeros around the spatial axes of data_format",
        "keras.ops.pad(x, pattern) or a keras.layers.ZeroPadding3D layer",
    ),
    "batch_flatten": (
        "each sample as one row in memory order (no channels_first transpose)",
        "keras.ops.reshape(x, (-1, n)), n the product of the non-batch dimensions",
    ),
    "batch_dot": (
        "Keras 2.2's axes rules (keras.ops.matmul's differ)",
        "keras.ops.einsum with the axes spelled out ('bij,bjk->bik' for 3D inputs)",
    ),
    "batch_get_value": (
        "a list of NumPy values",
        "[keras.ops.convert_to_numpy(v) for v in values]",
    ),
    "switch": (
        "Keras 2 chose keras.ops.cond or keras.ops.where by the condition's rank, "
        "a lower-rank condition picking whole rows",
        "keras.ops.cond(c, then_fn, else_fn) for a scalar condition, "
        "keras.ops.where(c, a, b) for a tensor one",
    ),
    "variable": (
        "a tf.Variable of dtype floatx() by default, as Keras 2's (keras.Variable would "
        "join a layer's weights, which a Keras 2 K.variable did not)",
        "keras.Variable(value, dtype=dtype), or self.add_weight(...) in a layer",
    ),
    "constant": (
        "tf.constant with dtype floatx() by default and Keras 2's shape= (a value "
        "filling it), which keras.ops.convert_to_tensor does not take",
        "keras.ops.convert_to_tensor(value, dtype), or keras.ops.full(shape, value, dtype)",
    ),
    "batch_set_value": (
        "assigns each (variable, value) pair",
        "variable.assign(value) for each pair",
    ),
}
COMPAT_BACKEND.update(
    {
        name: (f"parallel_keras.compat.{name}", f"{_KERAS2_OPS_WHY}: {why}", modern)
        for name, (why, modern) in _KERAS2_OPS.items()
    }
)
# K.update(x, new_x) -> x.assign(new_x), and the others.
_ASSIGNS = {"update": "assign", "update_add": "assign_add", "update_sub": "assign_sub"}
_GENERIC_ACTION = (
    "Keras 3 has no such backend function: write it with keras.ops "
    "(https://keras.io/api/ops/) or tf.*, keeping Keras 2's defaults "
    "(axis, epsilon) explicit."
)


# TF1's global seed. Keras 2 built its initializers from TF ops, so this seed
# made the initial weights (and dropout) reproducible; Keras 3 initializers
# draw from Keras's own seed generator, which only keras.utils.set_random_seed
# seeds (with Python's `random`, NumPy and TF's global seed).
_TF_SEEDS = frozenset(
    f"tensorflow.{prefix}{name}"
    for prefix in ("", "compat.v1.")
    for name in ("set_random_seed", "random.set_random_seed")
)
_SEED_REASON = (
    "Keras 2 built initializers from TF ops, so TF's graph seed made the initial "
    "weights reproducible; Keras 3 initializers draw from Keras's seed generator, "
    "which keras.utils.set_random_seed seeds, together with TF's global seed, "
    "Python's `random` and NumPy (the same value: np.random.seed/random.seed calls "
    "with it, or after this line, see no difference)"
)


def _signature_text(op: Op) -> str:
    passed = [f"{name}={value}" for name, _, value in op.explicit]
    passed += [f"{name}={value}" for name, value in op.extra]
    return f"keras.{op.target}({', '.join(['...', *passed])})"


_FUNCTION_UPDATES_WHY = (
    "`K.function(inputs, outputs, updates)` ran Keras 2's symbolic variable updates at "
    "each call, in practice a training step (`optimizer.get_updates(...)`, built on "
    "`K.gradients`); Keras 3 has neither symbolic gradients nor optimizer updates, so "
    "no function can run them with the same meaning"
)
_FUNCTION_UPDATES_FIX = (
    "write the step as a function: `with tf.GradientTape() as tape: loss = "
    "<the loss from the model's outputs>` then `grads = tape.gradient(loss, "
    "weights)` and `optimizer.apply_gradients(zip(grads, weights))`, and call it "
    "where the K.function was called (or put it in the model's `train_step`)."
)
_TILE = "parallel_keras.compat.tile"
_TILE_WHY = (
    "Keras 2's K.tile was tf.tile, which takes computed multiples (a tensor, "
    "`K.stack([batch_size])`); keras.ops.tile iterates them in Python and fails on a "
    "symbolic tensor"
)
_TILE_MODERN = "tf.tile(x, multiples), or keras.ops.tile(x, [int, ...]) for literal ints"


def _computed_repeats(call: cst.Call) -> bool:
    """Whether `K.tile(x, n)`'s `n` is not an int literal or a list/tuple of them."""
    arg = syntax.keyword(call, "n")
    positional = syntax.positional(call)
    if arg is None and len(positional) < 2:
        return False
    value = arg.value if arg is not None else positional[1].value
    if isinstance(value, cst.Integer):
        return False
    return not (
        isinstance(value, (cst.List, cst.Tuple))
        and all(isinstance(element.value, cst.Integer) for element in value.elements)
    )


# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple] = [
    ("keras.backend.tile(x, <computed multiples>)", _TILE, _TILE_WHY, _TILE_MODERN),
    *(
        (f"keras.backend.{name}", target, why, modern)
        for name, (target, why, modern) in sorted(COMPAT_BACKEND.items())
    ),
    (
        "keras.backend.function(..., updates=...)",
        None,
        f"{_FUNCTION_UPDATES_WHY}: {_FUNCTION_UPDATES_FIX}",
    ),
    *(
        (
            f"keras.backend.{name}",
            _signature_text(op).replace("keras.tf.", "tf.", 1),
            "backend math moved to keras.ops"
            + ("; Keras 2's default passed explicitly" if op.explicit or op.extra else ""),
        )
        for name, op in sorted(OPS.items())
    ),
    (
        "keras.backend.sqrt",
        "keras.ops.sqrt(keras.ops.maximum(x, 0.0))",
        "Keras 2 clipped negative inputs to 0 before the square root",
    ),
    ("keras.backend.flatten", "keras.ops.reshape(x, (-1,))", "no flatten in keras.ops"),
    ("keras.backend.get_value", "keras.ops.convert_to_numpy(x)", "no get_value in Keras 3"),
    (
        "keras.backend.cast_to_floatx",
        "numpy.asarray(x, dtype=keras.backend.floatx())",
        "no cast_to_floatx in Keras 3; Keras 2's definition",
    ),
    (
        "keras.backend.eval",
        "keras.ops.convert_to_numpy(x)",
        "no eval in Keras 3; Keras 2's to_dense(x).eval(), a NumPy array",
    ),
    (
        "keras.backend.clip(x, lo, None)",
        "keras.ops.maximum(x, lo)",
        (
            "Keras 2 read a None bound as +inf (keras.ops.clip fails on None); "
            "None min: keras.ops.minimum(x, hi)"
        ),
    ),
    ("keras.backend.int_shape", "tuple(x.shape)", "no int_shape in Keras 3"),
    ("keras.backend.set_value", "variable.assign(value)", "no set_value in Keras 3"),
    *(
        (f"keras.backend.{name}", f"variable.{method}(value)", f"Keras 2's tf.{method}")
        for name, method in sorted(_ASSIGNS.items())
    ),
    ("optimizer.lr", "optimizer.learning_rate", "Keras 3 optimizers have no `lr`"),
    (
        "tf.set_random_seed (and tf.random.set_random_seed, tf.compat.v1's)",
        "keras.utils.set_random_seed(seed)",
        _SEED_REASON,
    ),
    *(
        (f"keras.backend.{name}", None, action)
        for name, action in sorted(_ACTIONS.items())
        if name not in COMPAT_BACKEND
    ),
    ("keras.backend.<other>", None, _GENERIC_ACTION),
]


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _number(node: cst.BaseExpression) -> float | None:
    """The value of a number literal (`1e-7`, `-1`), else None."""
    try:
        value = ast.literal_eval(syntax.code(node))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _comma(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))


def _append(args: list[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    if args:
        args[-1] = _comma(args[-1])
    return [*args, new]


class BackendOpsRule(context.Rule):
    """`K.argmax(x)` -> `keras.ops.argmax(x, axis=-1)`."""

    name = RULE
    reads = {"handled_calls": context.Phase.REWRITE}

    def leave_Call(self, ctx, original, updated):
        if id(original.func) in ctx.facts.handled_calls:
            return updated  # Another rule's (a placeholder given to target_tensors).
        qualified = ctx.qualified_name(original.func) or ""
        # `from tensorflow import set_random_seed`: the import itself is
        # flagged by the TF1 names rule; the call stays as it is written.
        if (
            qualified in _TF_SEEDS
            and isinstance(original.func, cst.Attribute)
            and not syntax.has_star(updated)
        ):
            return self._seed(ctx, original, updated)
        module, _, name = qualified.rpartition(".")
        if module != "keras.backend" or name in KEPT or name in _ELSEWHERE:
            return updated
        text = syntax.dotted(original.func)
        if name == "tile" and not syntax.has_star(updated) and _computed_repeats(updated):
            ctx.require_import("parallel_keras")
            ctx.compat(original, RULE, f"`{text}` -> `{_TILE}`: {_TILE_WHY}", _TILE_MODERN)
            return updated.with_changes(func=syntax.expression(_TILE))
        if name in COMPAT_BACKEND and not _function_with_updates(name, updated):
            target, why, modern = COMPAT_BACKEND[name]
            ctx.require_import("parallel_keras")
            ctx.compat(original, RULE, f"`{text}` -> `{target}`: {why}", modern)
            return updated.with_changes(func=syntax.expression(target))
        if _function_with_updates(name, updated):
            ctx.flag(original, RULE, _FUNCTION_UPDATES_WHY, _FUNCTION_UPDATES_FIX)
            return updated
        keras_name = ctx.keras_module()
        in_ops = self._in_keras_ops(ctx, original, updated, name, keras_name)
        if in_ops is not None:
            return in_ops
        if name in ("in_train_phase", "in_test_phase"):
            phased = self._phase(ctx, original, updated, name, text)
            if phased is not None:
                return phased
        one_call = _ONE_CALL_REWRITES.get(name)
        rewritten = (
            one_call(ctx, original, updated, text, f"{keras_name}.ops") if one_call else None
        )
        if rewritten is not None:
            return rewritten
        ctx.flag(
            original,
            RULE,
            f"`{text}` does not exist in Keras 3",
            _ACTIONS.get(name, _GENERIC_ACTION),
        )
        return updated

    def _in_keras_ops(self, ctx, original, updated, name, keras_name):
        """`K.<name>(...)` as its keras.ops form (ctc, clip, the OPS table), or None."""
        if name == "ctc_batch_cost" and self._ctc_rewritable(updated):
            return self._ctc(ctx, original, updated, keras_name)
        if name == "clip" and not syntax.has_star(updated):
            clipped = self._clip(ctx, original, updated, keras_name)
            if clipped is not None:
                return clipped
        if name in OPS and not syntax.has_star(updated):
            return self._rewrite(ctx, original, updated, name, OPS[name], keras_name)
        return None

    def _rewrite(self, ctx, original, updated, name, op, keras_name):
        text = syntax.dotted(original.func)
        if op.target.startswith("tf."):
            target = f"{ctx.tf_module()}.{op.target[3:]}"
        else:
            target = f"{keras_name}.{op.target}"
        renames = dict(op.renames)
        positional = syntax.positional(updated)
        if len(positional) > len(_KERAS2_ARITY.get(name, ())) and op.dropped:
            ctx.flag(
                original,
                RULE,
                f"`{text}` with a positional `name`",
                f"pass name= by keyword (or drop it) and migrate again; "
                f"`keras.{op.target}` has no name parameter.",
            )
            return updated
        none_means = _none_means(op, positional, updated, keras_name)
        args = _mapped_args(op, renames, none_means, updated)
        defaults = []
        for parameter, position, default in op.explicit:
            given = len(positional) > position or syntax.keyword(updated, parameter) is not None
            if not given:
                keyword = renames.get(parameter, parameter)
                default = default.replace("keras.", f"{keras_name}.", 1)
                args = _append(args, syntax.make_arg(keyword, syntax.expression(default)))
                defaults.append(f"{keyword}={default}")
        for keyword, value in op.extra:
            args = _append(args, syntax.make_arg(keyword, syntax.expression(value)))
            defaults.append(f"{keyword}={value}")
        reason = _rewrite_reason(op, defaults, none_means, updated)
        ctx.change(original, RULE, f"`{text}` -> `{target}` ({reason})")
        return updated.with_changes(func=syntax.expression(target), args=args)

    def _phase(self, ctx, original, updated, name, text):
        """`K.in_train_phase(x, alt, training=t)` -> `(x if t else alt)`.

        Exact where Keras 3 passes layers a Python `training` (True, False or
        None, which Keras 2 read as the test phase); Keras 2 called `x` and
        `alt` when they were callables, so lambdas and missing `training` stay
        flagged.
        """
        if syntax.has_star(updated):
            return None
        positional = [arg for arg in updated.args if arg.keyword is None]
        keywords = {arg.keyword.value: arg for arg in updated.args if arg.keyword is not None}
        values = [arg.value for arg in positional]
        for key in ("x", "alt", "training"):
            if key in keywords:
                values.append(keywords.pop(key).value)
        if keywords or len(values) != 3:
            return None
        first, second, training = values
        if any(isinstance(value, cst.Lambda) for value in (first, second)):
            return None
        if name == "in_test_phase":
            first, second = second, first
        ctx.change(
            original,
            RULE,
            f"`{text}(x, alt, training=t)` -> `x if t else alt` (Keras 3 passes a "
            "layer's `training` as True, False or None; None was Keras 2's test phase)",
        )

        def grouped(value):
            code = syntax.code(value)
            return (
                code
                if isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
                else f"({code})"
            )

        return syntax.expression(
            f"({grouped(first)} if {grouped(training)} else {grouped(second)})"
        )

    def _clip(self, ctx, original, updated, keras_name):
        """`K.clip(x, lo, None)` -> `keras.ops.maximum(x, lo)`.

        Keras 2 read a None bound as -inf/+inf (no bound) and, for number
        bounds, `max < min` as `max = min`; keras.ops.clip fails on None.
        Returns None when the bounds are neither: the plain rename is exact.
        """
        bound = {}
        for index, parameter in enumerate(("x", "min_value", "max_value")):
            arg = syntax.keyword(updated, parameter)
            if arg is None:
                positional = syntax.positional(updated)
                arg = positional[index] if len(positional) > index else None
            if arg is None:
                return None
            bound[parameter] = arg.value
        low, high = bound["min_value"], bound["max_value"]
        text = syntax.dotted(original.func)
        ops = f"{keras_name}.ops"
        x = bound["x"]
        if _is_none(low) or _is_none(high):
            if _is_none(low) and _is_none(high):
                call = cst.Call(syntax.expression(f"{ops}.convert_to_tensor"), args=[cst.Arg(x)])
                what = f"`{ops}.convert_to_tensor(x)`"
            else:
                func, limit = ("minimum", high) if _is_none(low) else ("maximum", low)
                call = cst.Call(
                    syntax.expression(f"{ops}.{func}"), args=[_comma(cst.Arg(x)), cst.Arg(limit)]
                )
                what = f"`{ops}.{func}(x, {syntax.code(limit)})`"
            ctx.change(
                original,
                RULE,
                f"`{text}` with a None bound -> {what}: Keras 2 read "
                "None as -inf/+inf (keras.ops.clip fails on None)",
            )
            return call
        low_number, high_number = _number(low), _number(high)
        if low_number is not None and high_number is not None and high_number < low_number:
            ctx.change(
                original,
                RULE,
                f"`{text}` -> `{ops}.clip` with max = min: Keras 2 "
                "raised a max below the min to the min",
            )
            return cst.Call(
                syntax.expression(f"{ops}.clip"),
                args=[_comma(cst.Arg(x)), _comma(cst.Arg(low)), cst.Arg(low)],
            )
        return None

    def _seed(self, ctx, original, updated):
        """`tf.set_random_seed(s)` -> `keras.utils.set_random_seed(s)`.

        The TF1 names rule (which runs later) renames the function to
        tf.random.set_seed; its report entry for this call is replaced by
        this one, since the call no longer is what it describes.
        """
        text = syntax.dotted(original.func)
        target = f"{ctx.keras_module()}.utils.set_random_seed"
        line = ctx.line(original)
        ctx.report.changes[:] = [
            change
            for change in ctx.report.changes
            if not (change.line == line and f"{text.rpartition('.')[2]}` -> `" in change.message)
        ]
        ctx.change(original, RULE, f"`{text}(seed)` -> `{target}(seed)`: {_SEED_REASON}")
        return updated.with_changes(func=syntax.expression(target))

    @staticmethod
    def _ctc_rewritable(call) -> bool:
        # y_pred appears twice in the rewrite, so it must be a plain name.
        return (
            len(call.args) == 4
            and not any(arg.keyword or arg.star for arg in call.args)
            and isinstance(call.args[1].value, cst.Name)
        )

    def _ctc(self, ctx, original, updated, keras_name):
        y_true, y_pred, input_length, label_length = (
            syntax.code(arg.value) for arg in updated.args
        )
        ops = f"{keras_name}.ops"
        ctx.change(
            original,
            RULE,
            f"`{syntax.dotted(original.func)}` -> `{ops}.ctc_loss` on log-probabilities "
            "with the blank as the last class, as Keras 2 computed it (keras.ops takes "
            "logits, blank index 0 by default)",
        )
        return syntax.expression(
            f"{ops}.expand_dims({ops}.ctc_loss({y_true}, {ops}.log({y_pred} + "
            f"{keras_name}.backend.epsilon()), {ops}.cast({ops}.squeeze({label_length}, -1), "
            f"'int32'), {ops}.cast({ops}.squeeze({input_length}, -1), 'int32'), "
            f"mask_index={y_pred}.shape[-1] - 1), 1)"
        )

    def __init__(self):
        self._stored: set[int] = set()  # Assignment targets (`x._keras_shape = ...`).

    def visit_AssignTarget(self, ctx, node):
        self._stored.add(id(node.target))

    def leave_Attribute(self, ctx, original, updated):
        if original.attr.value == "_keras_shape" and id(original) not in self._stored:
            # Keras 2 set it on every tensor a layer made: int_shape(x), a
            # tuple with None where unknown.
            ctx.change(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `tuple(...shape)`: Keras 3 tensors have "
                "no _keras_shape; their static shape, None where unknown, as Keras 2 gave it",
            )
            value = updated.value
            if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cst.Call(
                cst.Name("tuple"),
                args=[cst.Arg(cst.Attribute(value=value, attr=cst.Name("shape")))],
            )
        if original.attr.value == "tf" and ctx.qualified_name(original) == "keras.backend.tf":
            # Keras 2's TensorFlow backend module imported tensorflow as tf.
            tf_name = ctx.tf_module()
            ctx.change(original, RULE, f"`{syntax.dotted(original)}` -> `{tf_name}`")
            return syntax.expression(tf_name)
        # `model.optimizer.lr` -> `model.optimizer.learning_rate`.
        if original.attr.value != "lr":
            return updated
        owner = original.value
        owner_name = (
            owner.attr.value
            if isinstance(owner, cst.Attribute)
            else (owner.value if isinstance(owner, cst.Name) else "")
        )
        if owner_name not in ("optimizer", "opt", "optim"):
            return updated
        ctx.change(
            original,
            RULE,
            f"`{syntax.dotted(original)}` -> `.learning_rate` (Keras 3 optimizers have no `lr`)",
        )
        return updated.with_changes(attr=cst.Name("learning_rate"))


def _of_shape(function: str, value: cst.BaseExpression) -> cst.Call:
    """`function(value.shape)`, with `value` parenthesised where it needs it."""
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(
        cst.Name(function),
        args=[cst.Arg(cst.Attribute(value=value, attr=cst.Name("shape")))],
    )


def _none_means(op, positional, call: cst.Call, keras_name: str) -> dict[int, str]:
    """id(argument) -> what Keras 2 read its literal None as, for `op.none_means`."""
    none_means = {}
    for parameter, position, value in op.none_means:
        given = (
            positional[position] if len(positional) > position else syntax.keyword(call, parameter)
        )
        if given is not None and _is_none(given.value):
            none_means[id(given)] = value.replace("keras.", f"{keras_name}.", 1)
    return none_means


def _mapped_args(op, renames, none_means, call: cst.Call) -> list[cst.Arg]:
    """`call`'s arguments with None written out, keywords renamed, dropped ones gone."""
    args = []
    for arg in call.args:
        if id(arg) in none_means:
            arg = arg.with_changes(value=syntax.expression(none_means[id(arg)]))
        if arg.keyword is None:
            args.append(arg)
            continue
        keyword = arg.keyword.value
        if keyword in op.dropped:
            continue
        if keyword in renames:
            arg = arg.with_changes(keyword=cst.Name(renames[keyword]))
        args.append(arg)
    if args and len(args) != len(call.args):
        args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
    return args


def _rewrite_reason(op, defaults: list[str], none_means: dict[int, str], call: cst.Call) -> str:
    """Why a backend call became `op.target`, with what was written out or dropped."""
    module = op.target.rsplit(".", 1)[0]
    reason = (
        f"Keras 2's TF backend called {op.target}"
        if op.target.startswith("tf.")
        else f"Keras 3 moved backend math to keras.{module}"
    )
    if defaults:
        reason += f"; Keras 2's {', '.join(defaults)} passed explicitly (keras.ops differs)"
    if none_means:
        reason += (
            f"; Keras 2 read None as {', '.join(sorted(set(none_means.values())))}"
            ", written out (keras.ops reads None otherwise)"
        )
    if op.dropped & {arg.keyword.value for arg in call.args if arg.keyword}:
        reason += f"; dropped {', '.join(sorted(op.dropped))}= (no effect on values)"
    return reason


def _function_with_updates(name: str, call: cst.Call) -> bool:
    """`K.function(inputs, outputs, updates)`: not given the compat path (flagged instead)."""
    return name == "function" and bool(
        syntax.keyword(call, "updates") or len(syntax.positional(call)) > 2
    )


# -- Backend functions with one exact Keras 3 spelling each --------------------
# Each takes (ctx, original, updated, text of the call's name, ops module) and
# returns the rewritten call, or None when the call's form does not match.


def _sqrt(ctx, original, updated, text, ops):
    if len(updated.args) != 1 or updated.args[0].keyword:
        return None
    ctx.change(
        original,
        RULE,
        f"`{text}(x)` -> `{ops}.sqrt({ops}.maximum(x, 0.0))`: Keras 2 clipped negative inputs to 0",
    )
    inner = cst.Call(
        syntax.expression(f"{ops}.maximum"),
        args=[
            _comma(updated.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)),
            cst.Arg(syntax.expression("0.0")),
        ],
    )
    return updated.with_changes(func=syntax.expression(f"{ops}.sqrt"), args=[cst.Arg(inner)])


def _flatten(ctx, original, updated, text, ops):
    if len(updated.args) != 1:
        return None
    ctx.change(original, RULE, f"`{text}(x)` -> `{ops}.reshape(x, (-1,))`")
    return updated.with_changes(
        func=syntax.expression(f"{ops}.reshape"),
        args=[_comma(updated.args[0]), cst.Arg(syntax.expression("(-1,)"))],
    )


def _int_shape(ctx, original, updated, text, ops):
    if len(updated.args) != 1 or updated.args[0].keyword:
        return None
    # Keras 2: tuple(x.get_shape().as_list()), None where unknown.
    ctx.change(
        original,
        RULE,
        f"`{text}(x)` -> `tuple(x.shape)` (the static shape, "
        "None where unknown, as Keras 2 gave it)",
    )
    return _of_shape("tuple", updated.args[0].value)


def _ndim(ctx, original, updated, text, ops):
    if len(updated.args) != 1 or updated.args[0].keyword:
        return None
    # Keras 2: len(int_shape(x)), a Python int (keras.ops.ndim of a
    # symbolic tensor is a symbolic tensor).
    ctx.change(original, RULE, f"`{text}(x)` -> `len(x.shape)` (a Python int, as in Keras 2)")
    return _of_shape("len", updated.args[0].value)


def _get_value(ctx, original, updated, text, ops):
    if len(updated.args) != 1:
        return None
    ctx.change(original, RULE, f"`{text}(x)` -> `{ops}.convert_to_numpy(x)`")
    return updated.with_changes(func=syntax.expression(f"{ops}.convert_to_numpy"))


def _cast_to_floatx(ctx, original, updated, text, ops):
    """Keras 2 (backend/common.py): `np.asarray(x, dtype=floatx())`, a NumPy array."""
    if len(updated.args) != 1 or updated.args[0].keyword or syntax.has_star(updated):
        return None
    ctx.require_import("numpy")
    keras_name = ops.rpartition(".")[0]
    ctx.change(
        original,
        RULE,
        f"`{text}(x)` -> `numpy.asarray(x, dtype={keras_name}.backend.floatx())` "
        "(Keras 2's definition)",
    )
    value = syntax.code(updated.args[0].value)
    return syntax.expression(f"numpy.asarray({value}, dtype={keras_name}.backend.floatx())")


def _set_value(ctx, original, updated, text, ops):
    if len(updated.args) != 2:
        return None
    ctx.change(original, RULE, f"`{text}(variable, value)` -> `variable.assign(value)`")
    variable, value = updated.args
    return cst.Call(
        func=cst.Attribute(value=variable.value, attr=cst.Name("assign")),
        args=[value.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
    )


def _assign(ctx, original, updated, text, ops):
    """`K.update(x, new_x)` and `update_add`/`update_sub`: the variable's own assign."""
    if len(updated.args) != 2 or syntax.has_star(updated):
        return None
    variable, value = updated.args
    if variable.keyword is not None or value.keyword is not None:
        return None
    method = _ASSIGNS[(ctx.qualified_name(original.func) or "").rpartition(".")[2]]
    ctx.change(
        original,
        RULE,
        f"`{text}(variable, value)` -> `variable.{method}(value)` (Keras 2's "
        f"tf.{method}; Keras 3 assigns when it runs)",
    )
    return cst.Call(
        func=cst.Attribute(value=variable.value, attr=cst.Name(method)),
        args=[value.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
    )


_PLACEHOLDER_SIGNATURE = ("shape", "ndim", "dtype", "sparse", "name")


def _placeholder(ctx, original, updated, text, ops):
    """`K.placeholder(shape=(None, 3))` -> `keras.Input(batch_shape=(None, 3))`.

    Keras 2's placeholder was a symbolic input of that full shape (batch
    axis included; `ndim=n` alone meant n unknown axes) and dtype (None:
    floatx()), which is what `keras.Input(batch_shape=...)` is; Keras 3 reads
    it in a functional model or in `parallel_keras.compat.function`.
    """
    if syntax.has_star(updated):
        return None
    call, _ = syntax.keywordize(updated, _PLACEHOLDER_SIGNATURE, keep_first=False)
    shape, ndim = syntax.keyword(call, "shape"), syntax.keyword(call, "ndim")
    if shape is not None and not (
        isinstance(shape.value, cst.Name) and shape.value.value == "None"
    ):
        batch_shape = shape.value
        dropped = [ndim] if ndim is not None else []
    elif ndim is not None and isinstance(ndim.value, cst.Integer):
        batch_shape = syntax.expression(
            "("
            + ", ".join(["None"] * int(ndim.value.value))
            + ("," if ndim.value.value == "1" else "")
            + ")"
        )
        dropped = [ndim] + ([shape] if shape is not None else [])
    else:
        return None  # No shape known from the code: flagged.
    args = [arg for arg in call.args if arg is not shape and all(arg is not d for d in dropped)]
    keras_name = ops.rpartition(".")[0]
    ctx.change(
        original,
        RULE,
        f"`{text}(...)` -> `{keras_name}.Input(batch_shape=...)`: Keras 2's placeholder was "
        "a symbolic input of that full shape (batch axis included) and dtype (floatx() "
        "by default)",
    )
    new_args = [syntax.make_arg("batch_shape", batch_shape)]
    for arg in args:
        new_args = _append(new_args, arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return call.with_changes(func=syntax.expression(f"{keras_name}.Input"), args=new_args)


_ONE_CALL_REWRITES = {
    **dict.fromkeys(_ASSIGNS, _assign),
    "placeholder": _placeholder,
    "sqrt": _sqrt,
    "flatten": _flatten,
    "int_shape": _int_shape,
    "ndim": _ndim,
    "get_value": _get_value,
    # Keras 2: `to_dense(x).eval(session=...)`; convert_to_numpy densifies too.
    "eval": _get_value,
    "cast_to_floatx": _cast_to_floatx,
    "set_value": _set_value,
}
