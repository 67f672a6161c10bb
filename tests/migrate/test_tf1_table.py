# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/tf1_table.py: what the generated TF1 table maps.

tests/migrate/test_tf1_names.py regenerates the whole table and compares it
(a subprocess); here a few entries are read against TensorFlow's own upgrade
table in this process, and the table's shape is checked: what each part
holds, and that the parts do not contradict each other.
"""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import tf1_table

_upgrade = pytest.importorskip("tensorflow.tools.compatibility.tf_upgrade_v2")
_renames = pytest.importorskip("tensorflow.tools.compatibility.renames_v2")


@pytest.mark.parametrize(
    "tf1, tf2",
    [
        ("tf.ceil", "tf.math.ceil"),
        ("tf.log", "tf.math.log"),
        ("tf.matrix_band_part", "tf.linalg.band_part"),
        ("tf.VERSION", "tf.version.VERSION"),
        ("tf.FixedLenFeature", "tf.io.FixedLenFeature"),
    ],
)
def test_renames_are_tensorflows(tf1, tf2):
    assert tf1_table.RENAMES[tf1] == tf2
    assert _renames.renames[tf1] == tf2


@pytest.mark.parametrize(
    "tf1, tf2, keywords",
    [
        ("tf.arg_max", "tf.argmax", {"dimension": "axis"}),
        # Still a TF 2 name: only its keywords change.
        ("tf.reduce_sum", None, {"keep_dims": "keepdims", "reduction_indices": "axis"}),
    ],
)
def test_argument_changes_are_tensorflows(tf1, tf2, keywords):
    spec = _upgrade.TFAPIChangeSpec()
    assert tf1_table.ARGS_CHANGED.get(tf1) == tf2
    assert tf1_table.KEYWORD_RENAMES[tf1] == keywords
    for old, new in keywords.items():
        assert spec.function_keyword_renames[tf1][old] == new


def test_positional_slots_are_tensorflows_reorders():
    spec = _upgrade.TFAPIChangeSpec()
    for name in ("tf.argmax", "tf.nn.space_to_depth", "tf.reduce_sum"):
        if name in spec.function_reorders:
            assert tf1_table.POSITIONAL_NAMES[name] == list(spec.function_reorders[name]), name
    assert tf1_table.POSITIONAL_NAMES["tf.argmax"] == [
        None,
        None,
        "name",
        "dimension",
        "output_type",
    ]


def test_the_parts_do_not_overlap():
    assert not set(tf1_table.RENAMES) & set(tf1_table.ARGS_CHANGED)
    assert not set(tf1_table.RENAMES) & set(tf1_table.COMPAT_ONLY)
    assert not set(tf1_table.ARGS_CHANGED) & set(tf1_table.COMPAT_ONLY)
    # Names TF 2 still has as another function are never rewritten.
    rewritten = {*tf1_table.RENAMES, *tf1_table.ARGS_CHANGED, *tf1_table.COMPAT_ONLY}
    assert not rewritten & set(tf1_table.TF2_SAME_NAME)


def test_every_entry_is_a_tf_name_outside_the_other_rules():
    names = [
        *tf1_table.RENAMES.items(),
        *tf1_table.ARGS_CHANGED.items(),
        *((name, name) for name in tf1_table.COMPAT_ONLY),
    ]
    for tf1, tf2 in names:
        assert tf1.startswith("tf.") and tf2.startswith("tf."), (tf1, tf2)
        # Keras names and removed modules belong to other rules or flags.
        assert not tf1.startswith(("tf.keras.", "tf.contrib.", "tf.estimator.")), tf1
    assert "tf.contrib" in tf1_table.REMOVED_MODULES


def test_keyword_renames_name_a_keyword_or_its_removal():
    for function, renames in tf1_table.KEYWORD_RENAMES.items():
        assert function.startswith("tf."), function
        for old, new in renames.items():
            assert old.isidentifier() and (new is None or new.isidentifier()), (function, old)


@pytest.mark.parametrize("name, graph_only", [("tf.placeholder", True), ("tf.assign_add", False)])
def test_compat_only_says_whether_it_works_eagerly(name, graph_only):
    assert tf1_table.COMPAT_ONLY[name] is graph_only
