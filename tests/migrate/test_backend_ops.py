# SPDX-License-Identifier: Apache-2.0
"""Backend math rewrites keep Keras 2's defaults (the audit rule).

Keras 2's backend signatures come from its released source
(`tests/data/keras2_backend_signatures.json`, written by
`tests/data/extract_keras2_backend_signatures.py`); Keras 3's are read live
from `keras.ops` / `keras.random` / `keras.activations`. For every function
the rule rewrites, a call that leaves every optional argument out must land
on a Keras 3 call whose arguments equal Keras 2's defaults, and a call that
passes every argument by keyword must pass each to the matching parameter.
"""

from __future__ import annotations

import ast
import inspect
import json
import pathlib
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import migrate
from parallel_keras.migrate.rules import backend_ops

_DATA = pathlib.Path(__file__).parents[1] / "data" / "keras2_backend_signatures.json"
KERAS2 = json.loads(_DATA.read_text(encoding="utf-8"))["functions"]


def _migrated_call(call_text: str) -> tuple[object, ast.Call, migrate.MigrationResult]:
    source = f"import keras\nfrom keras import backend as K\nresult = {call_text}\n"
    result = migrate.migrate_source(source)
    tree = ast.parse(result.migrated)
    call = tree.body[-1].value
    return call, result


def _resolve(func: ast.expr):
    names = []
    while isinstance(func, ast.Attribute):
        names.append(func.attr)
        func = func.value
    assert isinstance(func, ast.Name) and func.id in _ROOTS, ast.unparse(func)
    target = _ROOTS[func.id]
    for name in reversed(names):
        target = getattr(target, name)
    return target


def _bind(call: ast.Call) -> dict[str, str]:
    """Keras 3 parameter -> argument source, defaults filled in, for `call`."""
    signature = inspect.signature(_resolve(call.func))
    bound = signature.bind(
        *(ast.unparse(arg) for arg in call.args),
        **{keyword.arg: ast.unparse(keyword.value) for keyword in call.keywords},
    )
    values = dict(bound.arguments)
    for name, parameter in signature.parameters.items():
        if name not in values:
            values[name] = repr(parameter.default)
    return values


_ROOTS = {"keras": keras, "tf": tf, "tensorflow": tf}
# What Keras 2's defaults and Keras 3's (as their repr) are evaluated with.
_NAMESPACE = {**_ROOTS, "np": np, "floatx": keras.backend.floatx, "epsilon": keras.backend.epsilon}


def _value(source: str):
    try:
        value = eval(source, dict(_NAMESPACE))  # Literals and keras.backend.floatx().
    except Exception:  # noqa: BLE001  (a repr that is not an expression: compared as text)
        return source
    if isinstance(value, tf.DType) or (
        isinstance(value, str) and value in ("float16", "float32", "float64")
    ):
        return keras.backend.standardize_dtype(value)
    return value


def _same_value(left: str, right: str) -> bool:
    return _value(left) == _value(right)


def _keras2_default(name: str, param: str, default: str) -> str:
    """Keras 2's default, with what its `None` meant (`dtype=None`: floatx())."""
    meaning = KERAS2[name].get("none_means", {}).get(param)
    if default == "None" and meaning is not None and "np.random" not in meaning:
        return meaning  # A random seed means no seed: leave None.
    return default


# K.tile(x, n) with n a name goes through compat.tile (its multiples may be a
# tensor); keras.ops.tile is written for literal multiples only (checked by value).
@pytest.mark.parametrize("name", sorted(set(backend_ops.OPS) - {"tile"}))
def test_rewrite_passes_every_keras2_default_keras3_changed(name):
    params = KERAS2[name]["params"]
    required = [param for param, default in params if default is None]
    call, result = _migrated_call(f"K.{name}({', '.join('p_' + p for p in required)})")
    assert not result.report.flags, result.report.flags
    keras3 = _bind(call)
    # An argument the rule cannot pass on safely (a seed) must be flagged.
    refused = set()
    for param, default in params:
        if default is not None:
            passed = [f"p_{p}" for p in required] + [f"{param}=p_{param}"]
            _, alone = _migrated_call(f"K.{name}({', '.join(passed)})")
            if alone.report.flags:
                refused.add(param)
    # Which Keras 3 parameter each Keras 2 parameter lands on: pass them all.
    full, _ = _migrated_call(
        f"K.{name}({', '.join(f'{p}=p_{p}' for p, _ in params if p not in refused)})"
    )
    landed = {value: parameter for parameter, value in _bind(full).items()}
    for param, default in params:
        if param in refused:
            raise AssertionError(f"K.{name}'s {param}= is flagged")
        if param in backend_ops.OPS[name].dropped:
            assert f"p_{param}" not in landed
            continue
        assert f"p_{param}" in landed, f"K.{name}'s {param}= is lost by the rewrite"
        if default is not None:
            got = keras3[landed[f"p_{param}"]]
            default = _keras2_default(name, param, default)
            assert _same_value(got, default), (
                f"K.{name}({', '.join(required)}) -> {ast.unparse(call)}: Keras 2's "
                f"{param}={default}, Keras 3 gets {landed[f'p_{param}']}={got}"
            )


def test_every_rewritten_name_is_a_keras2_backend_function():
    assert set(backend_ops.OPS) <= set(KERAS2)


@pytest.mark.parametrize(
    "before, after",
    [
        ("K.argmax(p)", "keras.ops.argmax(p, axis=-1)"),
        ("K.argmin(p, 1)", "keras.ops.argmin(p, 1)"),
        ("K.expand_dims(p)", "keras.ops.expand_dims(p, axis=-1)"),
        ("K.cumsum(p)", "keras.ops.cumsum(p, axis=0)"),
        ("K.concatenate([a, b])", "keras.ops.concatenate([a, b], axis=-1)"),
        ("K.l2_normalize(p, axis=-1)", "keras.ops.normalize(p, axis=-1, order=2, epsilon=1e-6)"),
        ("K.relu(p, alpha=0.1)", "keras.activations.relu(p, negative_slope=0.1)"),
        ("K.clip(p, min_value=0.0, max_value=1.0)", "keras.ops.clip(p, x_min=0.0, x_max=1.0)"),
        ("K.ones_like(p, name='ones')", "keras.ops.ones_like(p, dtype=keras.backend.floatx())"),
        (
            "K.random_normal((2, 3), stddev=0.5)",
            "tensorflow.random.normal((2, 3), stddev=0.5, dtype=keras.backend.floatx())",
        ),
        (
            "K.random_uniform((2,), seed=1)",
            "tensorflow.random.uniform((2,), seed=1, maxval=1.0, dtype=keras.backend.floatx())",
        ),
        ("K.sqrt(p)", "keras.ops.sqrt(keras.ops.maximum(p, 0.0))"),
        ("K.get_uid('dense')", "K.get_uid('dense')"),
        # Keras 2 read a None clip bound as -inf/+inf; keras.ops.clip fails on None.
        ("K.clip(K.abs(p), K.epsilon(), None)", "keras.ops.maximum(keras.ops.abs(p), K.epsilon())"),
        ("K.clip(p, None, 1.0)", "keras.ops.minimum(p, 1.0)"),
        ("K.clip(p, max_value=None, min_value=lo)", "keras.ops.maximum(p, lo)"),
        ("K.clip(p, None, None)", "keras.ops.convert_to_tensor(p)"),
        ("K.clip(p, 1.0, 0.5)", "keras.ops.clip(p, 1.0, 1.0)"),
        ("K.clip(p, lo, hi)", "keras.ops.clip(p, lo, hi)"),
        ("K.ones_like(p, dtype=None)", "keras.ops.ones_like(p, dtype=keras.backend.floatx())"),
        ("K.zeros_like(p, None)", "keras.ops.zeros_like(p, keras.backend.floatx())"),
        (
            "K.random_normal((2,), 0.0, 1.0, None)",
            "tensorflow.random.normal((2,), 0.0, 1.0, keras.backend.floatx())",
        ),
        ("K.argmax(p, axis=None)", "keras.ops.argmax(p, axis=0)"),
        ("K.one_hot(p, 3)", "keras.ops.one_hot(p, 3)"),
        ("K.permute_dimensions(p, (1, 0))", "keras.ops.transpose(p, (1, 0))"),
        ("K.repeat_elements(p, rep=2, axis=1)", "keras.ops.repeat(p, repeats=2, axis=1)"),
        ("K.int_shape(p)[-1]", "tuple(p.shape)[-1]"),
        ("K.int_shape(p + p)", "tuple((p + p).shape)"),
        ("K.in_train_phase(a, b, training=training)", "(a if training else b)"),
        ("K.in_train_phase(a * 2, b, training)", "((a * 2) if training else b)"),
        ("K.in_test_phase(a, b, training=t)", "(b if t else a)"),
    ],
)
def test_before_after(before, after):
    # A line as long as the longest rewrite, so no rewritten line is split.
    wide = "# " + "-" * 100
    result = migrate.migrate_source(
        f"{wide}\nimport keras\nfrom keras import backend as K\ny = {before}\n"
    )
    assert result.migrated.splitlines()[-1] == f"y = {after}"
    assert not result.report.flags
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


@pytest.mark.parametrize(
    "before, words",
    [
        ("K.gradients(loss, [x])[0]", "tf.GradientTape"),
        ("K.ctc_batch_cost(a, model(b), c, d)", "mask_index=y_pred.shape[-1] - 1"),
        ("K.hard_sigmoid(p)", "keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)"),
    ],
)
def test_flagged_with_the_keras3_way(before, words):
    result = migrate.migrate_source(f"import keras\nfrom keras import backend as K\ny = {before}\n")
    assert len(result.report.flags) == 1
    assert words in result.report.flags[0].action
    assert result.migrated.splitlines()[-1] == f"y = {before}"


def _keras2_values(name, *args, **kwargs):
    """Keras 2's numbers, computed the way its TF backend did (tf ops)."""
    if name == "argmax":
        return tf.argmax(args[0], axis=kwargs.get("axis", -1))
    if name == "l2_normalize":
        return tf.nn.l2_normalize(args[0], axis=kwargs.get("axis"))
    if name == "sqrt":
        return tf.sqrt(tf.clip_by_value(args[0], 0.0, np.inf))
    if name == "cumsum":
        return tf.cumsum(args[0], axis=kwargs.get("axis", 0))
    if name == "clip":
        low, high = kwargs["min_value"], kwargs["max_value"]
        if low is not None and high is not None and high < low:
            high = low
        return tf.clip_by_value(
            args[0], -np.inf if low is None else low, np.inf if high is None else high
        )
    if name == "argmax_none":
        return tf.argmax(args[0], axis=None)
    if name == "permute_dimensions":
        return tf.transpose(args[0], perm=(1, 0))
    if name == "repeat_elements":  # Keras 2: split along the axis, repeat, concat.
        splits = tf.split(args[0], args[0].shape[1], axis=1)
        return tf.concat([piece for piece in splits for _ in range(2)], axis=1)
    if name == "one_hot":
        return tf.one_hot(np.array([0, 2]), depth=3, axis=-1)
    if name == "int_shape":
        return tf.constant(tuple(args[0].shape))
    # Keras 2.2.4's TF backend, function by function.
    if name == "gather":  # tf.nn.embedding_lookup(reference, indices)
        return tf.nn.embedding_lookup(args[0], tf.constant([1, 0, 1]))
    if name == "tile":
        return tf.tile(args[0], [2, 1])
    if name == "arange":  # tf.range, then cast to dtype='int32'
        return tf.cast(tf.range(1, 7, 2), "int32")
    if name == "ndim":
        return tf.constant(len(tf.constant(args[0]).get_shape().as_list()))
    if name == "softplus":
        return tf.nn.softplus(args[0])
    if name == "logsumexp":
        return tf.reduce_logsumexp(args[0], axis=1)
    if name == "cos":
        return tf.cos(args[0])
    raise KeyError(name)


@pytest.mark.parametrize(
    "call, name, kwargs",
    [
        ("K.argmax(p)", "argmax", {}),
        ("K.l2_normalize(p)", "l2_normalize", {}),
        ("K.l2_normalize(p, axis=1)", "l2_normalize", {"axis": 1}),
        ("K.sqrt(p)", "sqrt", {}),
        ("K.cumsum(p)", "cumsum", {}),
        ("K.clip(p, K.epsilon(), None)", "clip", {"min_value": 1e-7, "max_value": None}),
        ("K.clip(p, None, 0.4)", "clip", {"min_value": None, "max_value": 0.4}),
        ("K.clip(p, None, None)", "clip", {"min_value": None, "max_value": None}),
        ("K.clip(p, 0.5, 0.1)", "clip", {"min_value": 0.5, "max_value": 0.1}),
        ("K.argmax(p, axis=None)", "argmax_none", {}),
        ("K.permute_dimensions(p, (1, 0))", "permute_dimensions", {}),
        ("K.repeat_elements(p, 2, 1)", "repeat_elements", {}),
        ("K.one_hot(K.cast([0, 2], 'int32'), 3)", "one_hot", {}),
        ("K.int_shape(p)", "int_shape", {}),
        ("K.gather(p, [1, 0, 1])", "gather", {}),
        ("K.tile(p, [2, 1])", "tile", {}),
        ("K.arange(1, 7, 2)", "arange", {}),
        ("K.ndim(p)", "ndim", {}),
        ("K.softplus(p)", "softplus", {}),
        ("K.logsumexp(p, axis=1)", "logsumexp", {}),
        ("K.cos(p)", "cos", {}),
    ],
)
def test_rewritten_call_computes_keras2_numbers(call, name, kwargs):
    p = np.array([[0.3, -2.0, 1e-4], [4.0, 0.5, -0.2]], "float32")
    code = migrate.migrate_source(f"import keras\nfrom keras import backend as K\ny = {call}\n")
    namespace = {"p": p}
    exec(code.migrated, namespace)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(namespace["y"]),
        _keras2_values(name, p, **kwargs).numpy(),
        rtol=1e-6,
        atol=1e-7,
    )


def test_ctc_rewrite_computes_keras2_ctc_batch_cost():
    rng = np.random.default_rng(0)
    batch, steps, classes = 3, 7, 5  # Blank = class 4 (Keras 2: the last one).
    y_pred = tf.nn.softmax(rng.normal(size=(batch, steps, classes)).astype("float32"))
    labels = np.array([[1, 2, 0], [3, 3, 1], [0, 1, 2]], "int32")
    label_length = np.array([[2], [3], [1]], "int32")
    input_length = np.array([[7], [6], [5]], "int32")
    source = textwrap.dedent("""\
        import keras
        from keras import backend as K
        y = K.ctc_batch_cost(labels, y_pred, input_length, label_length)
        """)
    result = migrate.migrate_source(source)
    assert not result.report.flags
    namespace = dict(
        labels=labels, y_pred=y_pred, input_length=input_length, label_length=label_length
    )
    exec(result.migrated, namespace)
    # Keras 2: TF1 ctc_loss, time-major log(p + epsilon), sparse labels.
    indices = [[i, j] for i in range(batch) for j in range(label_length[i, 0])]
    sparse = tf.SparseTensor(indices, [labels[i, j] for i, j in indices], labels.shape)
    expected = tf.compat.v1.nn.ctc_loss(
        labels=sparse,
        inputs=tf.math.log(tf.transpose(y_pred, (1, 0, 2)) + 1e-7),
        sequence_length=input_length[:, 0],
    )[:, None]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(namespace["y"]), expected.numpy(), rtol=1e-5
    )


def _keras2_dot(x, y):
    """Keras 2.3.1's `K.dot` (TF backend), as its source computes it."""
    if len(x.shape) > 2 or len(y.shape) > 2:
        permute = list(range(len(y.shape)))
        permute = [permute.pop(-2)] + permute
        xt = tf.reshape(x, [-1, x.shape[-1]])
        yt = tf.reshape(tf.transpose(y, perm=permute), [y.shape[-2], -1])
        return tf.reshape(
            tf.matmul(xt, yt), tuple(x.shape[:-1]) + tuple(y.shape[:-2]) + tuple(y.shape[-1:])
        )
    return tf.matmul(x, y)


@pytest.mark.parametrize(
    "x_shape, y_shape",
    [
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((5, 2, 3), (6, 3, 4)),
        ((3,), (2, 3, 4)),
    ],
)
def test_dot_rewrite_computes_keras2_dot_on_nd_tensors(x_shape, y_shape):
    # Keras 2's K.dot on ND tensors is numpy's dot (not matmul's batching).
    rng = np.random.default_rng(0)
    x = rng.normal(size=x_shape).astype("float32")
    y = rng.normal(size=y_shape).astype("float32")
    code = migrate.migrate_source("import keras\nfrom keras import backend as K\nz = K.dot(x, y)\n")
    namespace = {"x": x, "y": y}
    exec(code.migrated, namespace)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(namespace["z"]),
        _keras2_dot(tf.constant(x), tf.constant(y)).numpy(),
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    "name, param",
    sorted(
        (name, param)
        for name in backend_ops.OPS
        for param, meaning in KERAS2[name].get("none_means", {}).items()
        if "np.random" not in meaning
    ),
)  # A seed of None means no seed: kept.
def test_a_literal_none_lands_on_what_keras2_read_it_as(name, param):
    params = KERAS2[name]["params"]
    args = [
        f"{p}=None" if p == param else f"{p}=p_{p}"
        for p, default in params
        if default is None or p == param
    ]
    call, result = _migrated_call(f"K.{name}({', '.join(args)})")
    assert not result.report.flags, result.report.flags
    meaning = KERAS2[name]["none_means"][param]
    code = ast.unparse(call)
    if name == "clip":  # No bound at all: not keras.ops.clip with None.
        assert "None" not in code, code
        return
    keras3 = _bind(call)
    landed = [value for value in keras3.values() if _same_value(value, meaning)]
    assert landed, f"K.{name}({param}=None) -> {code}: Keras 2 read None as {meaning}"


@pytest.mark.parametrize(
    "before, after",
    [
        ("tf.set_random_seed(7)", "keras.utils.set_random_seed(7)"),
        ("tf.random.set_random_seed(seed=s)", "keras.utils.set_random_seed(seed=s)"),
        ("tf.compat.v1.set_random_seed(s)", "keras.utils.set_random_seed(s)"),
    ],
)
def test_tf1_seed_becomes_keras_set_random_seed(before, after):
    source = (
        f"import numpy as np\nimport keras\nimport tensorflow as tf\nnp.random.seed(7)\n{before}\n"
    )
    result = migrate.migrate_source(source)

    assert result.migrated.splitlines()[-1] == after
    # `import tensorflow as tf` is left unused by the rewrite when tf was only
    # used for the seed, and goes.
    rewrites = [change for change in result.report.changes if change.rule != "imports"]
    assert [change.rule for change in rewrites] == [backend_ops.RULE]
    assert "NumPy" in rewrites[0].message
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


def test_migrated_tf1_seed_gives_the_same_initial_weights_every_run():
    # Keras 2: TF's graph seed fixed every initializer. Keras 3 initializers
    # ignore tf.random.set_seed; the rewrite must make reruns agree again.
    source = textwrap.dedent("""\
        import numpy as np
        import tensorflow as tf
        import keras
        np.random.seed(7)
        tf.set_random_seed(7)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        """)
    code = migrate.migrate_source(source).migrated
    weights = []
    for _ in range(2):
        namespace = {}
        exec(code, namespace)
        weights.append(namespace["model"].get_weights()[0])
    np.testing.assert_array_equal(weights[0], weights[1])


def test_keras2_backend_tf_module_and_dtype_run_in_a_migrated_loss():
    source = (
        "import numpy as np\n"
        "from keras import backend as K\n"
        "def loss(y_true, y_pred):\n"
        "    picked = K.gather(K.transpose(y_pred), K.arange(0, K.ndim(y_pred)))\n"
        "    return K.tf.reduce_sum(picked) + K.cast(K.dtype(y_true) == 'float32', K.floatx())\n"
        "value = loss(np.ones((3, 2), 'float32'), np.arange(6, dtype='float32').reshape(3, 2))\n"
    )
    namespace: dict = {}
    with pytest.raises(AttributeError):
        exec(source, namespace)  # Keras 3's backend has no gather, arange, ndim, tf, dtype.
    result = migrate.migrate_source(source)
    assert not result.report.flags, result.report.flags
    exec(result.migrated, namespace)
    # Rows 0 and 1 of the transpose: columns 0 and 1 of y_pred, summed (15), plus 1.
    assert float(namespace["value"]) == 16.0


def test_keras2_keras_shape_attribute_reads_the_static_shape():
    source = (
        "import keras\n"
        "inputs = keras.Input((None, 5, 3))\n"
        "channels = inputs._keras_shape[-1]\n"
        "shape = (inputs + 1)._keras_shape\n"
    )
    namespace: dict = {}
    with pytest.raises(AttributeError):
        exec(source, namespace)  # noqa: S102
    result = migrate.migrate_source(source)
    assert not result.report.flags
    exec(result.migrated, namespace)  # noqa: S102
    assert namespace["channels"] == 3
    assert namespace["shape"] == (None, None, 5, 3)  # Keras 2's int_shape, None where unknown.
    stored = "x._keras_shape = (None, 3)\n"
    assert migrate.migrate_source(stored).migrated == stored


_RNG = np.random.RandomState(3)
_INPUTS = {
    "img": _RNG.rand(2, 5, 5, 3).astype("float32"),
    "kern": _RNG.rand(3, 3, 3, 4).astype("float32"),
    "vol": _RNG.rand(1, 4, 4, 4, 2).astype("float32"),
    "kern3": _RNG.rand(2, 2, 2, 2, 3).astype("float32"),
    "seq": _RNG.rand(2, 6, 3).astype("float32"),
    "kern1": _RNG.rand(3, 3, 2).astype("float32"),
    "bias": _RNG.rand(4).astype("float32"),
    "chw": _RNG.rand(2, 4, 3, 3).astype("float32"),
    "a": _RNG.rand(2, 3, 4).astype("float32"),
    "b": _RNG.rand(2, 4, 5).astype("float32"),
    "c": _RNG.rand(2, 3, 5).astype("float32"),
}


@pytest.mark.parametrize(
    "call",
    [
        "K.conv2d(img, kern)",
        "K.conv2d(img, kern, strides=(2, 2), padding='same')",
        "K.conv3d(vol, kern3, padding='same')",
        "K.conv1d(seq, kern1, padding='causal', dilation_rate=2)",
        "K.conv1d(seq, kern1)",
        "K.bias_add(img[..., :1] + K.zeros((1, 1, 4)), bias)",
        "K.bias_add(chw, bias, data_format='channels_first')",
        "K.spatial_2d_padding(img, ((1, 2), (0, 1)))",
        "K.spatial_2d_padding(chw, data_format='channels_first')",
        "K.spatial_3d_padding(vol)",
        "K.temporal_padding(seq, (2, 0))",
        "K.batch_flatten(img)",
        "K.batch_dot(a, b)",
        "K.batch_dot(a, c, axes=(1, 1))",
        "K.batch_dot(a, K.permute_dimensions(a, (0, 2, 1)))",
        "K.ones((2, 3)) + K.zeros((2, 3), dtype='float32')",
        "K.batch_get_value([K.ones((2,)), img])[1]",
        "K.eval(K.variable(a) * 2)",
        "K.eval(a)",
        "K.maximum(K.cast_to_floatx(1.0), a)",
        "K.cast_to_floatx([[1, 2], [3, 4]]) * 2",
        "K.switch(a > 0.5, a, a * 2)",
        "K.switch(K.sum(a) > 1.0, a, -a)",
        "K.switch(K.sum(a) < 1.0, lambda: a, lambda: -a)",
        "K.variable([[1, 2], [3, 4]]) * 2",
        "K.variable(a, name='v') - a",
        "K.constant(1.5, shape=(2, 2)) + K.constant([[1, 2], [3, 4]])",
        "K.constant([1, 2], dtype='int32')",
    ],
)
def test_keras2_only_backend_functions_compute_keras2_numbers(call):
    import tf_keras

    result = migrate.migrate_source(f"import keras\nfrom keras import backend as K\ny = {call}\n")
    assert not result.report.flags, result.report.flags
    assert "K." not in result.migrated.splitlines()[-1]
    namespace = dict(_INPUTS)
    exec(result.migrated, namespace)  # noqa: S102
    # Keras 2's own TF-backend functions (the tf_keras package is Keras 2's code).
    tensors = {name: tf.constant(value) for name, value in _INPUTS.items()}
    expected = eval(call, {"K": tf_keras.backend, **tensors})  # noqa: S307
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(namespace["y"]), np.asarray(expected), rtol=1e-5, atol=1e-6
    )


def test_keras2_update_functions_assign_the_variable():
    result = migrate.migrate_source(
        "from keras import backend as K\n"
        "K.update(v, [1.0, 2.0])\nK.update_add(v, [0.5, 0.5])\nK.update_sub(w, [1.0, 1.0])\n"
        "K.batch_set_value([(u, [7.0, 8.0])])\n"
    )
    assert not result.report.flags
    assert "v.assign_add([0.5, 0.5])" in result.migrated
    namespace = {name: tf.Variable([0.0, 0.0]) for name in "uvw"}
    exec(result.migrated, namespace)  # noqa: S102
    np.testing.assert_array_equal(namespace["v"].numpy(), [1.5, 2.5])
    np.testing.assert_array_equal(namespace["w"].numpy(), [-1.0, -1.0])
    np.testing.assert_array_equal(namespace["u"].numpy(), [7.0, 8.0])


PARTIAL_CONV = """\
import numpy as np
from keras import backend as K
from keras.layers import Input, Layer
from keras.models import Model


class MaskedConv(Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(3, 3, 2, 4), initializer='ones', name='kernel')
        self.bias = self.add_weight(shape=(4,), initializer='ones', name='bias')
        self.kernel_mask = K.ones(shape=(3, 3, 2, 4))
        self.built = True

    def call(self, inputs):
        padded = K.spatial_2d_padding(inputs, ((1, 1), (1, 1)), 'channels_last')
        mask = K.conv2d(padded, self.kernel_mask, padding='valid')
        out = K.conv2d(padded, self.kernel, padding='valid') / (mask + 1.0)
        return K.bias_add(out, self.bias)

    def compute_output_shape(self, input_shape):
        return input_shape[:3] + (4,)


def gram_loss(y_true, y_pred):
    features = K.reshape(y_pred, (-1, 16, 4))
    gram = K.batch_dot(K.permute_dimensions(features, (0, 2, 1)), features)
    target = K.reshape(y_true, (-1, 16, 4))
    return K.mean(K.square(gram - K.batch_dot(K.permute_dimensions(target, (0, 2, 1)), target)))


inputs = Input(shape=(4, 4, 2))
model = Model(inputs, MaskedConv()(inputs))
model.compile(optimizer='sgd', loss=gram_loss)
x = np.linspace(0, 1, 4 * 4 * 4 * 2, dtype='float32').reshape(4, 4, 4, 2)
y = np.linspace(1, 0, 4 * 4 * 4 * 4, dtype='float32').reshape(4, 4, 4, 4) / 10
loss = model.train_on_batch(x, y)
"""


def test_migrated_keras2_layer_with_backend_kernels_trains_with_keras2_weights():
    result = migrate.migrate_source(PARTIAL_CONV)
    assert not result.report.flags, result.report.flags
    namespace: dict = {"__name__": "partial_conv"}
    exec(result.migrated, namespace)  # noqa: S102
    model = namespace["model"]
    # The mask kernel is no weight (as in Keras 2): only kernel and bias train.
    assert [w.name for w in model.weights] == ["kernel", "bias"]
    np.testing.assert_array_equal(model.layers[1].kernel_mask.numpy(), np.ones((3, 3, 2, 4)))
    assert np.isfinite(float(np.asarray(namespace["loss"])))
    assert not np.allclose(model.layers[1].kernel.numpy(), 1.0)  # it trained


def test_keras2_switch_on_a_vector_condition_picks_whole_rows():
    # Keras 2 on TF 1 (tf.where v1): a rank-1 condition selects along the
    # first axis (tf_keras, on TF 2's broadcasting tf.where, refuses this).
    result = migrate.migrate_source(
        "from keras import backend as K\ny = K.switch(a[:, 0, 0] > 0.58, a, -a)\n"
    )
    assert not result.report.flags
    a = _INPUTS["a"]
    namespace = {"a": a}
    exec(result.migrated, namespace)  # noqa: S102
    rows = a[:, 0, 0] > 0.58
    assert rows.any() and not rows.all()
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(namespace["y"]), np.where(rows[:, None, None], a, -a)
    )


def test_backend_functions_imported_by_name_run_once_their_calls_are_rewritten():
    # Keras 3's keras.backend has neither name: the import the rewrites left
    # unused must go, or the migrated file fails at its first line. And
    # `import keras` is not added when the rewritten code never reads it.
    source = textwrap.dedent(
        """\
        from keras.backend import int_shape, update_add as add


        def step(variable, x):
            add(variable, x)
            return int_shape(x)
        """
    )
    result = migrate.migrate_source(source, "script.py")
    assert "keras.backend" not in result.migrated
    assert "import keras" not in result.migrated
    namespace: dict = {}
    exec(compile(result.migrated, "script.py", "exec"), namespace)  # noqa: S102
    variable = keras.Variable(np.ones((2, 3), "float32"))
    assert namespace["step"](variable, np.ones((2, 3), "float32")) == (2, 3)
    np.testing.assert_allclose(variable.numpy(), 2.0)


@pytest.mark.parametrize(
    "call",
    [
        "K.variable([[1, 2], [3, 4]])",
        "K.variable(np.arange(3), dtype='float64', name='v')",
        "K.constant(1.5, shape=(2, 2))",
        "K.constant([1, 2], dtype='int32')",
    ],
)
def test_keras2_variable_and_constant_keep_their_kind_and_dtype(call):
    import tf_keras

    result = migrate.migrate_source(
        f"import numpy as np\nfrom keras import backend as K\ny = {call}\n"
    )
    assert not result.report.flags, result.report.flags
    [change] = [c for c in result.report.changes if c.modern]
    assert "keras" in change.modern
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    expected = eval(call, {"K": tf_keras.backend, "np": np})  # noqa: S307
    got = namespace["y"]
    # A variable where Keras 2 gave one (K.set_value can change it), not
    # among a layer's weights; the dtype Keras 2 gave.
    assert isinstance(got, tf.Variable) == isinstance(expected, tf.Variable)
    assert not isinstance(got, keras.Variable)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


PLACEHOLDER_FUNCTION = """\
import numpy as np
from keras import backend as K

x = K.placeholder(shape=(None, 3))
codes = K.placeholder(ndim=1, dtype='int32')
y = K.sum(x * 2.0, axis=1) + K.cast(codes, 'float32')
f = K.function([x, codes], [y])
out = f([np.ones((2, 3), 'float32'), np.array([1, 5], 'int32')])[0]
"""


def test_a_placeholder_with_its_shape_in_the_code_is_a_keras_input_that_runs():
    result = migrate.migrate_source(PLACEHOLDER_FUNCTION)

    assert not result.report.flags, result.report.flags
    assert "x = keras.Input(batch_shape=(None, 3))" in result.migrated
    assert "codes = keras.Input(batch_shape=(None,), dtype='int32')" in result.migrated
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    np.testing.assert_allclose(namespace["out"], [7.0, 11.0])
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


def test_a_placeholder_without_its_shape_in_the_code_stays_flagged_with_the_fix():
    result = migrate.migrate_source("from keras import backend as K\np = K.placeholder(ndim=n)\n")

    [flag] = result.report.flags
    assert "keras.Input(batch_shape=" in flag.action and "not in the code" in flag.action
    assert "p = K.placeholder(ndim=n)" in result.migrated


def test_a_function_with_updates_stays_flagged_with_the_training_step_to_write():
    result = migrate.migrate_source(
        "from keras import backend as K\n"
        "updates = opt.get_updates(params=model.trainable_weights, loss=loss)\n"
        "train = K.function([model.input, target], [loss], updates)\n"
    )

    [flag] = [f for f in result.report.flags if "K.function" in f.message]
    assert "symbolic gradients" in flag.message
    assert "tf.GradientTape" in flag.action and "apply_gradients" in flag.action
    assert "train = K.function([model.input, target], [loss], updates)" in result.migrated


COMPUTED_TILE = """\
import numpy as np
from keras import backend as K
from keras.layers import Input, Lambda
from keras.models import Model


def regular_grids(x):
    batch_size = K.shape(x)[0]
    grid = K.reshape(K.arange(0, 6, dtype='float32'), (1, 6))
    return K.tile(grid, K.stack([batch_size, 1]))


inputs = Input(shape=(3,))
model = Model(inputs, Lambda(regular_grids)(inputs))
out = model.predict(np.zeros((5, 3), 'float32'), verbose=0)
"""


def test_tile_by_computed_multiples_runs_as_keras2_tf_tile():
    # Keras 2's STN idiom: K.tile(grid, K.stack([batch_size])) in the graph;
    # keras.ops.tile iterates the multiples and fails on a symbolic tensor.
    result = migrate.migrate_source(COMPUTED_TILE)
    assert "parallel_keras.compat.tile(grid, keras.ops.stack([batch_size, 1]))" in (result.migrated)
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    np.testing.assert_array_equal(namespace["out"], np.tile(np.arange(6.0), (5, 1)))
