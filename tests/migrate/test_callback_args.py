# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/callback_args.py: removed callback arguments and the tensorboard package."""

from __future__ import annotations

import inspect

import pytest

from parallel_keras.migrate.rules import callback_args
from tests.migrate.helpers import check_flag, check_rewrite

REWRITES = {
    "tensorboard_removed_args": (
        "from keras.callbacks import TensorBoard\n"
        "tb = TensorBoard(log_dir='l', batch_size=32, write_grads=True, write_graph=False)\n",
        "from keras.callbacks import TensorBoard\ntb = TensorBoard(log_dir='l', write_graph=False)\n",
    ),
    "tensorboard_positional": (
        "import keras\ntb = keras.callbacks.TensorBoard('l', 0, 32)\n",
        "import keras\ntb = keras.callbacks.TensorBoard('l', histogram_freq=0)\n",
    ),
    "reduce_lr_epsilon": (
        "from keras.callbacks import ReduceLROnPlateau\nr = ReduceLROnPlateau(epsilon=0.01)\n",
        "from keras.callbacks import ReduceLROnPlateau\nr = ReduceLROnPlateau(min_delta=0.01)\n",
    ),
    "progbar": (
        "import keras\np = keras.callbacks.ProgbarLogger(count_mode='samples')\n",
        "import keras\np = keras.callbacks.ProgbarLogger()\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_base_logger_flagged():
    check_flag("import keras\nb = keras.callbacks.BaseLogger()\n", "averages")


def test_dropped_and_renamed_arguments_are_gone_from_keras3():
    import keras

    for cls, args in {**callback_args.DROPPED, **callback_args.RENAMED}.items():
        params = inspect.signature(getattr(keras.callbacks, cls)).parameters
        assert not set(args) & set(params), cls
    for cls in callback_args.REMOVED_CLASSES:
        assert not hasattr(keras.callbacks, cls)


_EARLY_STOPPING = {
    "baseline_keyword": (
        "import keras\nstop = keras.callbacks.EarlyStopping(monitor='val_acc', baseline=0.75, "
        "patience=2)\n",
        "import keras\nimport parallel_keras.callbacks\n\nstop = parallel_keras.callbacks."
        "EarlyStopping(\n    monitor='val_acc', mode='max', baseline=0.75, patience=2\n)\n",
    ),
    "baseline_positional": (
        "from keras.callbacks import EarlyStopping\n"
        "stop = EarlyStopping('val_loss', 0, 2, 0, 'min', 0.5)\n",
        "from keras.callbacks import EarlyStopping\nimport parallel_keras.callbacks\n\n"
        "stop = parallel_keras.callbacks.EarlyStopping('val_loss', 0, 2, 0, 'min', 0.5)\n",
    ),
    "restore_best_weights": (
        "import keras\nstop = keras.callbacks.EarlyStopping(patience=3, "
        "restore_best_weights=True)\n",
        "import keras\nimport parallel_keras.callbacks\n\nstop = parallel_keras.callbacks."
        "EarlyStopping(\n    patience=3, restore_best_weights=True\n)\n",
    ),
}


@pytest.mark.parametrize("before, after", _EARLY_STOPPING.values(), ids=_EARLY_STOPPING.keys())
def test_early_stopping_with_keras2_semantics_moves_to_the_library_class(before, after):
    result = check_rewrite(before, after)
    (change,) = [c for c in result.report.changes if "EarlyStopping" in c.message]
    assert change.modern and "keras.callbacks.EarlyStopping" in change.modern


@pytest.mark.parametrize(
    "call",
    ["EarlyStopping(patience=2)", "EarlyStopping(baseline=None, restore_best_weights=False)"],
)
def test_early_stopping_that_keras3_runs_alike_stays(call):
    source = f"from keras.callbacks import EarlyStopping\nstop = {call}\n"
    assert check_rewrite(source, source).report.changes == []
