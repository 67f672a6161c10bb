# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/tf1_names.py: TF1 names rewritten from TF's upgrade table, or flagged."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests.migrate.helpers import check_flag, check_rewrite, run

REWRITES = {
    "set_random_seed": (
        "import tensorflow as tf\ntf.set_random_seed(1)\n",
        # Keras 3 initializers ignore TF's seed (test_backend_ops).
        "import tensorflow as tf\nimport keras\n\nkeras.utils.set_random_seed(1)\n",
    ),
    "log_and_band_part": (
        "import tensorflow as tf\ny = tf.log(x) + tf.matrix_band_part(a, 0, -1)\n",
        "import tensorflow as tf\ny = tf.math.log(x) + tf.linalg.band_part(a, 0, -1)\n",
    ),
    "logging_module": (
        "import tensorflow as tf\ntf.logging.set_verbosity(tf.logging.ERROR)\n",
        "import tensorflow as tf\ntf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)\n",
    ),
    "to_float_is_cast": (
        "import tensorflow as tf\nz = tf.to_float(m)\n",
        "import tensorflow as tf\nz = tf.cast(m, tf.float32)\n",
    ),
    "to_int32_keeps_name": (
        "import tensorflow as tf\nz = tf.to_int32(m, name='q')\n",
        "import tensorflow as tf\nz = tf.cast(m, tf.int32, name='q')\n",
    ),
    "assign_add_eager_compat": (
        "import tensorflow as tf\ntf.assign_add(v, 1)\n",
        "import tensorflow as tf\ntf.compat.v1.assign_add(v, 1)\n",
    ),
    "aliased_module": (
        "import tensorflow as T\ny = T.log(x)\n",
        "import tensorflow as T\ny = T.math.log(x)\n",
    ),
    "keyword_renames": (
        "import tensorflow as tf\na = tf.reduce_sum(x, axis=1, keep_dims=True)\n"
        "b = tf.argmax(x, dimension=1)\n",
        "import tensorflow as tf\na = tf.reduce_sum(x, axis=1, keepdims=True)\n"
        "b = tf.argmax(x, axis=1)\n",
    ),
    "reordered_positional_slot_by_keyword": (
        "import tensorflow as tf\nc = tf.space_to_depth(x, 2, 'n')\n",
        "import tensorflow as tf\nc = tf.nn.space_to_depth(x, 2, name='n')\n",
    ),
    "unchanged_positional_slots_kept": (
        "import tensorflow as tf\ng = tf.reduce_mean(x, 1)\n",
        "import tensorflow as tf\ng = tf.reduce_mean(x, 1)\n",
    ),
    "dropout_keep_prob": (
        "import tensorflow as tf\nd = tf.nn.dropout(h, keep_prob=0.8)\n",
        "import tensorflow as tf\nd = tf.nn.dropout(h, rate=1 - (0.8))\n",
    ),
    "softmax_xent_labels_without_gradient": (
        "import tensorflow as tf\nf = tf.nn.softmax_cross_entropy_with_logits(labels=y, "
        "logits=z, dim=-1)\n",
        "import tensorflow as tf\nf = tf.nn.softmax_cross_entropy_with_logits(\n"
        "    labels=tf.stop_gradient(y), logits=z, axis=-1\n)\n",
    ),
    "compat_v1_untouched": (
        "import tensorflow.compat.v1 as tf\np = tf.placeholder(tf.float32)\n",
        "import tensorflow.compat.v1 as tf\np = tf.placeholder(tf.float32)\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


FLAGS = {
    "placeholder": (
        "import tensorflow as tf\np = tf.placeholder(tf.float32, [None, 3])\n",
        "keras.Input",
    ),
    "get_variable": (
        "import tensorflow as tf\nw = tf.get_variable('w', [3])\n",
        "add_weight",
    ),
    "train_optimizer": (
        "import tensorflow as tf\nopt = tf.train.AdamOptimizer(0.1)\n",
        "keras.optimizers",
    ),
    "layers_module": ("import tensorflow as tf\nh = tf.layers.dense(x, 3)\n", "keras.layers"),
    "contrib": (
        "import tensorflow as tf\ni = tf.contrib.layers.xavier_initializer()\n",
        "tf.contrib was removed",
    ),
    "too_many_positional": (
        "import tensorflow as tf\nd = tf.space_to_depth(x, 2, 'n', 'NHWC', 1)\n",
        "TF 2 keywords",
    ),
    "dropout_positional": ("import tensorflow as tf\ne = tf.nn.dropout(h, 0.8)\n", "rate=1 - p"),
    "removed_argument": (
        "import tensorflow as tf\nh = tf.cond(p, f1, f2, strict=True)\n",
        "delete strict=",
    ),
    "graph_mode_under_compat_v1": (
        "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n",
        "Keras 3 needs",
    ),
    "imported_by_name": (
        "from tensorflow import set_random_seed\nset_random_seed(1)\n",
        "tf.random.set_seed",
    ),
    "to_float_with_star": ("import tensorflow as tf\nz = tf.to_float(*args)\n", "tf.cast"),
}


@pytest.mark.parametrize("before, word", FLAGS.values(), ids=FLAGS.keys())
def test_flags(before, word):
    result = check_flag(before, word)
    assert result.migrated.endswith(before.splitlines()[-1] + "\n")  # code kept


def test_rewritten_tf1_calls_compute_the_tf1_values():
    import numpy as np
    import tensorflow as tf

    x = tf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    # What TF1 returned for tf.reduce_sum(x, 1, keep_dims=True) / tf.argmax(x, dimension=1).
    np.testing.assert_array_equal(tf.reduce_sum(x, axis=1, keepdims=True), [[8.0], [10.0]])
    np.testing.assert_array_equal(tf.argmax(x, axis=1), [1, 0])
    tf.random.set_seed(0)
    kept = tf.nn.dropout(tf.ones((1000,)), rate=1 - (0.8))
    assert 0.75 < float(tf.reduce_mean(tf.cast(kept > 0, tf.float32))) < 0.85  # keep_prob=0.8


def test_softmax_xent_v2_keeps_its_gradient_into_the_labels_and_a_second_run_keeps_it():
    # TF 1.5+'s _v2 is TF 2's tf.nn.softmax_cross_entropy_with_logits, whose
    # TF 2 name migrate reads as TF1's (no gradient into the labels): written
    # under that name, a second run added tf.stop_gradient.
    import tensorflow as tf

    before = (
        "import tensorflow as tf\n"
        "def loss(y_true, y_pred):\n"
        "    return tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=y_pred, dim=-1)\n"
    )
    result = run(before)
    assert "tf.compat.v1.nn.softmax_cross_entropy_with_logits_v2(" in result.migrated
    assert run(result.migrated).migrated == result.migrated
    namespace: dict = {}
    exec(compile(result.migrated, "script.py", "exec"), namespace)
    labels = tf.constant([[0.2, 0.8], [0.5, 0.5]])
    logits = tf.constant([[1.0, 2.0], [0.0, 3.0]])
    with tf.GradientTape() as tape:
        tape.watch(labels)
        value = namespace["loss"](labels, logits)
    expected = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    # d/dlabels of -sum(labels * log_softmax(logits)) is -log_softmax(logits).
    np.testing.assert_allclose(tape.gradient(value, labels), -tf.nn.log_softmax(logits), rtol=1e-6)


def test_a_name_twice_on_a_line_is_flagged_once():
    result = check_flag("import tensorflow as tf\ny = tf.Print(tf.Print(x, [x]), [x])\n")
    assert len(result.report.flags) == 1


def test_summary_protos_and_file_writers_run_through_compatibility_paths():
    result = check_rewrite(
        "import tensorflow as tf\n"
        "w = tf.summary.FileWriter(d)\n"
        "s = tf.Summary(value=[tf.Summary.Value(tag='a', simple_value=1.0)])\n",
        "import tensorflow as tf\nimport parallel_keras\n\n"
        "w = parallel_keras.compat.FileWriter(d)\n"
        "s = tf.compat.v1.Summary(\n"
        "    value=[tf.compat.v1.Summary.Value(tag='a', simple_value=1.0)]\n"
        ")\n",
    )
    assert not result.report.flags
    assert all(c.modern for c in result.report.changes if c.rule == "TF1 names")


def test_sessions_left_to_the_sessions_rule():
    result = check_rewrite(
        "import tensorflow as tf\nimport keras\nsess = tf.Session()\n",
        "import tensorflow as tf\nimport keras\n",
    )
    assert all(change.rule != "TF1 names" for change in result.report.changes)


@pytest.mark.subprocess
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TF")
def test_committed_table_matches_tensorflows_upgrade_table():
    root = pathlib.Path(__file__).parents[2]
    generated = subprocess.run(
        [sys.executable, str(root / "tests/migrate/make_tf1_table.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    committed = (root / "parallel_keras/migrate/rules/tf1_table.py").read_text()
    # The header names the TF version it was read from; the data must agree.
    assert generated.split('"""', 2)[2] == committed.split('"""', 2)[2]


def test_names_tf2_still_has_are_left_alone():
    source = (
        "import tensorflow as tf\ntf.debugging.assert_equal(a, b)\n"
        "i = tf.initializers.he_normal()\n"
    )
    result = check_rewrite(source, source)
    assert not result.report.flags


def test_every_rewrite_target_exists_in_installed_tensorflow():
    import tensorflow as tf

    from parallel_keras.migrate.rules import tf1_names

    missing = []
    for name, becomes, *_ in tf1_names.AUDIT:
        if becomes is None or not becomes.startswith("tf.") or "(" in becomes:
            continue
        target = tf
        for part in becomes.split(".")[1:]:
            target = getattr(target, part, None)
            if target is None:
                missing.append(f"{name} -> {becomes}")
                break
    assert not missing


def test_every_flag_of_the_table_survives_a_second_run():
    from parallel_keras.migrate.rules import tf1_names, tf1_table

    names = sorted({*tf1_table.COMPAT_ONLY, *tf1_table.ARGS_CHANGED})
    source = "import tensorflow as tf\n" + "".join(f"v = {name}(a, b)\n" for name in names)
    first = run(source)
    second = run(first.migrated)
    assert second.migrated == first.migrated
    carried = [flag for flag in second.report.flags if flag.rule == "earlier run"]
    assert not carried, carried[:3]
    assert len(second.report.flags) == len(first.report.flags)
    assert {f.line for f in first.report.flags} >= {
        number
        for number, name in enumerate(names, start=2)
        if (tf1_names.lookup(name) or ("",))[0] == "flag" and name not in tf1_names._EAGER_COMPAT
    }


_GRAPH_CLASS = """\
import tensorflow as tf


class Scores(object):
    def __init__(self):
        self.sess = tf.Session()
        self.x = tf.placeholder(tf.float32, shape=(None,))
        self.y = tf.log(self.x)

    def __call__(self, x):
        return self.sess.run(self.y, feed_dict={self.x: x})
"""


def test_self_contained_tf1_graph_class_runs_in_its_own_graph():
    from tests.migrate.helpers import check_rewrite

    result = check_rewrite(
        _GRAPH_CLASS,
        _GRAPH_CLASS.replace(
            "import tensorflow as tf\n", "import tensorflow as tf\nimport parallel_keras\n"
        )
        .replace("class Scores", "@parallel_keras.compat.tf1_graph\nclass Scores")
        .replace("tf.Session()", "parallel_keras.compat.Session()")
        .replace("tf.placeholder", "tf.compat.v1.placeholder")
        .replace("tf.log", "tf.math.log"),
    )
    assert not result.report.flags
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    import numpy as np

    np.testing.assert_allclose(
        namespace["Scores"]()(np.array([1.0, np.e], "float32")), [0.0, 1.0], rtol=1e-6
    )


def test_a_tf1_class_reading_a_keras_model_stays_flagged():
    # keras-yolo3's YOLO class feeds a Keras model's input: Keras 3 tensors are not
    # TF1 graph tensors, so no graph of its own can run it.
    from tests.migrate.helpers import run

    result = run(
        _GRAPH_CLASS.replace(
            "self.y = tf.log(self.x)", "self.y = tf.log(self.x) + K.learning_phase()"
        ).replace(
            "import tensorflow as tf\n", "import tensorflow as tf\nfrom keras import backend as K\n"
        )
    )
    assert "tf1_graph" not in result.migrated
    assert any("placeholder" in flag.message for flag in result.report.flags)


def test_every_name_kept_under_compat_v1_resolves_there():
    # What a TF1 graph class's names become: `tf.X` -> `tf.compat.v1.X`.
    import tensorflow as tf

    from parallel_keras.migrate.rules import tf1_names, tf1_table

    missing = []
    for name in tf1_table.COMPAT_ONLY:
        if name.startswith(tf1_names._NOT_IN_COMPAT_V1):
            continue  # Flagged even in a graph class.
        target = tf.compat.v1
        for part in name.split(".")[1:]:
            target = getattr(target, part, None)
            if target is None:
                missing.append(name)
                break
    assert not missing


_TF1_INITIALIZER = """\
import numpy as np
import keras
import tensorflow as tf


class ICNR:
    def __init__(self, initializer=tf.glorot_normal_initializer(seed=3)):
        self.initializer = initializer

    def __call__(self, shape, dtype=None, partition_info=None):
        return self.initializer(shape, dtype, partition_info)


layer = keras.layers.Conv2D(64, 3, kernel_initializer=ICNR())
dense = keras.layers.Dense(8, kernel_initializer=tf.truncated_normal_initializer(stddev=0.5))
model = keras.Sequential([keras.Input((6, 6, 32)), layer, keras.layers.Flatten(), dense])
out = model.predict(np.ones((2, 6, 6, 32), "float32"), verbose=0)
"""


def test_tf1_initializer_classes_run_through_tf_compat_v1_with_tf1s_call():
    namespace: dict = {}
    with pytest.raises(AttributeError):
        exec(_TF1_INITIALIZER, namespace)  # noqa: S102
    result = run(_TF1_INITIALIZER)
    assert "tf.compat.v1.glorot_normal_initializer(seed=3)" in result.migrated
    assert "tf.compat.v1.truncated_normal_initializer(stddev=0.5)" in result.migrated
    assert not result.report.flags
    assert {c.modern for c in result.report.changes if c.rule == "TF1 names"} >= {
        "keras.initializers.GlorotNormal(seed=...)",
        "keras.initializers.TruncatedNormal(seed=...)",
    }
    exec(result.migrated, namespace)  # noqa: S102
    kernel = namespace["layer"].kernel.numpy()
    # Glorot normal: truncated normal of stddev sqrt(2 / (fan_in + fan_out)).
    fan_in, fan_out = 3 * 3 * 32, 3 * 3 * 64
    np.testing.assert_allclose(kernel.std(), np.sqrt(2 / (fan_in + fan_out)), rtol=0.05)
    assert namespace["out"].shape == (2, 8)
    assert run(result.migrated).migrated == result.migrated


def test_tf1_resize_ops_keep_tf1s_sampling_in_a_lambda_layer():
    source = (
        "import numpy as np\n"
        "import keras\n"
        "import tensorflow as tf\n"
        "inputs = keras.Input((1, 2, 1))\n"
        "up = keras.layers.Lambda(lambda x: tf.image.resize_bilinear(x, size=(1, 4)))(inputs)\n"
        "near = keras.layers.Lambda(lambda x: tf.image.resize_nearest_neighbor(x, (1, 4)))(inputs)\n"
        "model = keras.Model(inputs, [up, near])\n"
        "out = model.predict(np.array([0.0, 2.0], 'float32').reshape(1, 1, 2, 1), verbose=0)\n"
    )
    result = run(source)
    assert not result.report.flags
    assert "tf.compat.v1.image.resize_bilinear(x, size=(1, 4))" in result.migrated
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    up, near = (np.asarray(o).reshape(-1) for o in namespace["out"])
    # TF1 (align_corners=False, no half-pixel centres): sample i at i * in / out.
    np.testing.assert_allclose(up, [0.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(near, [0.0, 0.0, 2.0, 2.0])


def test_tf1_names_reached_through_keras2_backend_tf_are_rewritten_in_one_run():
    source = (
        "import numpy as np\n"
        "from keras import backend as K\n"
        "x = np.array([0.0, 2.0], 'float32').reshape(1, 1, 2, 1)\n"
        "y = K.tf.image.resize_bilinear(x, size=(1, 4)) + K.tf.log(1.0)\n"
    )
    result = run(source)
    assert "K.tf" not in result.migrated
    assert not result.report.flags
    assert run(result.migrated).migrated == result.migrated
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    np.testing.assert_allclose(np.asarray(namespace["y"]).reshape(-1), [0.0, 1.0, 2.0, 2.0])


CONTRIB_DATA_PIPELINE = """\
import tensorflow as tf
from tensorflow.contrib.data.python.ops import prefetching_ops

dataset = tf.data.Dataset.range(8)
dataset = dataset.apply(tf.contrib.data.shuffle_and_repeat(4, seed=3))
dataset = dataset.apply(tf.contrib.data.map_and_batch(map_func=lambda v: v * 2, batch_size=2))
dataset = dataset.prefetch(tf.contrib.data.AUTOTUNE)
dataset = dataset.apply(prefetching_ops.prefetch_to_device('/cpu:0'))
"""


def test_contrib_data_pipeline_runs_on_tf_data_experimental():
    """avolkov1's cifar_common.py: tf.contrib.data's functions, moved unchanged."""
    result = run(CONTRIB_DATA_PIPELINE)
    assert not result.report.flags, result.report.flags
    assert "from tensorflow.data import experimental as prefetching_ops" in result.migrated
    assert run(result.migrated).migrated == result.migrated
    namespace: dict = {}
    exec(compile(result.migrated, "script.py", "exec"), namespace)  # noqa: S102
    import tensorflow as tf

    expected = tf.data.Dataset.range(8).shuffle(4, seed=3).repeat().map(lambda v: v * 2).batch(2)
    got = list(namespace["dataset"].take(6).as_numpy_iterator())
    want = list(expected.take(6).as_numpy_iterator())
    np.testing.assert_array_equal(np.stack(got), np.stack(want))
