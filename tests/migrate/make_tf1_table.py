# SPDX-License-Identifier: Apache-2.0
"""Writes `parallel_keras/migrate/rules/tf1_table.py` from TensorFlow's own upgrade table.

TensorFlow ships the table its `tf_upgrade_v2` tool applies
(`tensorflow/tools/compatibility/renames_v2.py`, `all_renames_v2.py` and
the argument tables of `tf_upgrade_v2.py`). This script reads that data
from the installed TensorFlow and writes it in the migration's own shape,
so the migration needs no TensorFlow at run time:

* `RENAMES`: TF1 name -> TF2 name of the same function (same object), and
  no argument renamed or reordered on the way;
* `ARGS_CHANGED`: TF1 name -> TF2 name where tf_upgrade_v2 also renames or
  reorders arguments (rewritten only when the call passes no argument that
  could land elsewhere);
* `COMPAT_ONLY`: TF1 name -> whether its `tf.compat.v1` twin says, in its
  docstring's TF2 compatibility note, that it does not work eagerly (names
  TF 2 still has, as a different function, are left out: a TF 2 script uses
  them as they are; see `TF2_SAME_NAME`);
* `TF2_SAME_NAME`: those names (`tf.debugging.assert_equal`,
  `tf.initializers.he_normal`, `tf.nn.ctc_loss`, ...);
* `MEANING_CHANGED`: TF1 name -> TF2 name where tf_upgrade_v2 rewrites the
  call or warns that its behaviour changed (flagged, never renamed);
* `REMOVED_MODULES`: TF1 modules tf_upgrade_v2 only warns about;
* `POSITIONAL_NAMES`: TF1 function -> for each positional slot, None when
  TF 2 reads that position the same way, else the TF1 keyword to pass it by
  (tf_upgrade_v2's reorder table);
* `KEYWORD_RENAMES`: TF1 function -> {TF1 keyword: TF 2 keyword, or None when
  TF 2 removed the argument}.

Run: `python tests/migrate/make_tf1_table.py > parallel_keras/migrate/rules/tf1_table.py`
(tests/migrate/test_tf1_names.py fails when the committed file is stale).
"""

from __future__ import annotations

import importlib
import os
import pprint

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

_GRAPH_ONLY_MARKERS = (
    "not compatible with eager execution",
    "not supported when eager execution is enabled",
    "not compatible with eager",
    "eager execution is not supported",
    "is not compatible with `tf.function`",
)
# Handled by other rules (TF1 sessions and GPU options, Keras namespaces).
_SKIPPED_PREFIXES = ("tf.keras.", "tf.contrib.", "tf.estimator.")


def _compat_object(name: str):
    import tensorflow as tf

    target = tf.compat.v1
    for part in name.split(".")[1:]:
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def _in_tf2(name: str) -> bool:
    import tensorflow as tf

    target = tf
    for part in name.split(".")[1:]:
        try:
            target = getattr(target, part)
        except Exception:  # noqa: BLE001  (lazy modules raise more than AttributeError)
            return False
    return True


def _graph_only(name: str) -> bool:
    target = _compat_object(name)
    doc = (getattr(target, "__doc__", None) or "").lower()
    return any(marker in doc for marker in _GRAPH_ONLY_MARKERS)


def build() -> str:
    upgrade = importlib.import_module("tensorflow.tools.compatibility.tf_upgrade_v2")
    spec = upgrade.TFAPIChangeSpec()
    changed_args = set(spec.function_keyword_renames) | set(spec.function_reorders)
    special = set(spec.function_transformers) | set(spec.function_warnings)
    renames, args_changed, compat_only, meaning_changed = {}, {}, {}, {}
    tf2_same_name = []
    for old, new in sorted(spec.symbol_renames.items()):
        if not old.startswith("tf.") or old.startswith(_SKIPPED_PREFIXES):
            continue
        if new.startswith("tf.compat.v1.") and _in_tf2(old):
            tf2_same_name.append(old)
        elif new.startswith("tf.compat.v1."):
            compat_only[old] = _graph_only(old)
        elif old in special:
            meaning_changed[old] = new
        elif old in changed_args:
            args_changed[old] = new
        else:
            renames[old] = new
    deprecations = importlib.import_module("tensorflow.tools.compatibility.module_deprecations_v2")
    removed_modules = sorted(
        name
        for name in deprecations.MODULE_DEPRECATIONS
        if name.startswith("tf.") and not name.startswith(_SKIPPED_PREFIXES)
    )
    positional_names = {
        name: list(order)
        for name, order in sorted(spec.function_reorders.items())
        if name.startswith("tf.")
        and not name.startswith(_SKIPPED_PREFIXES)
        and "keyword_required" not in order
    }
    keyword_renames = {
        name: dict(sorted(table.items()))
        for name, table in sorted(spec.function_keyword_renames.items())
        if name.startswith("tf.") and not name.startswith(_SKIPPED_PREFIXES)
    }
    import tensorflow as tf

    header = (
        '"""TF1 names and what TensorFlow 2 calls them: generated data, do not edit.\n\n'
        "Source: TensorFlow's upgrade table (tensorflow/tools/compatibility/\n"
        "renames_v2.py, all_renames_v2.py, and the keyword/reorder tables of\n"
        f"tf_upgrade_v2.py), read from TensorFlow {tf.__version__} by\n"
        "tests/migrate/make_tf1_table.py, which also says what each table holds.\n"
        '"""\n\n'
    )
    body = []
    # Annotated, so that type checkers know an empty table's type too.
    for name, annotation, table in (
        ("RENAMES", "dict[str, str]", renames),
        ("ARGS_CHANGED", "dict[str, str]", args_changed),
        ("COMPAT_ONLY", "dict[str, bool]", compat_only),
        ("TF2_SAME_NAME", "list[str]", tf2_same_name),
        ("MEANING_CHANGED", "dict[str, str]", meaning_changed),
        ("REMOVED_MODULES", "list[str]", removed_modules),
        ("POSITIONAL_NAMES", "dict[str, list[str | None]]", positional_names),
        ("KEYWORD_RENAMES", "dict[str, dict[str, str | None]]", keyword_renames),
    ):
        table_text = pprint.pformat(table, width=88, sort_dicts=True)
        body.append(f"{name}: {annotation} = {table_text}\n")
    return header + "\n".join(body)


if __name__ == "__main__":
    print(build(), end="")
