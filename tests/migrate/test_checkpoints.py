# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/checkpoints.py: `period=`, checkpoint suffixes, monitor modes.

The suffix renames are registered by the checkpoint rule and written by the
save-path rule, so those cases run both.
"""

from __future__ import annotations

import pytest

from parallel_keras.migrate import project as project_lib
from parallel_keras.migrate.rules import checkpoints, saving
from tests.migrate.helpers import changes, check_rules, flags

_RULES = (checkpoints.CheckpointRule, saving.SavePathRule)
_IMPORT = "from keras.callbacks import ModelCheckpoint\n"
_WEIGHTS_NOTE = (
    "# parallel-keras migrate: Keras 3 needs this suffix: a weights-only\n"
    "#   checkpoint writes only '.weights.h5' files (was '{was}').\n"
)
_MODEL_NOTE = (
    "# parallel-keras migrate: Keras 3 needs this suffix: a full-model\n"
    "#   checkpoint writes only '.keras' or '.h5' files (was '{was}').\n"
)
_PERIOD = (
    "`ModelCheckpoint(..., period=...)` -> `parallel_keras.callbacks.ModelCheckpoint`: "
    "Keras 3's ModelCheckpoint has no `period`"
)

REWRITES = {
    "weights_only_suffix": (
        _IMPORT + "c = ModelCheckpoint('w.hdf5', save_weights_only=True)\n",
        _IMPORT
        + _WEIGHTS_NOTE.format(was="w.hdf5")
        + "c = ModelCheckpoint('w.weights.h5', save_weights_only=True)\n",
        [],
    ),
    "full_model_hdf5_becomes_h5": (
        _IMPORT + "c = ModelCheckpoint('m.hdf5', save_weights_only=False)\n",
        _IMPORT
        + _MODEL_NOTE.format(was="m.hdf5")
        + "c = ModelCheckpoint('m.h5', save_weights_only=False)\n",
        [],
    ),
    "period_keyword_moves_to_the_library_class": (
        "import keras\nc = keras.callbacks.ModelCheckpoint('m.keras', period=2)\n",
        "import keras\nimport parallel_keras.callbacks\n\n"
        "c = parallel_keras.callbacks.ModelCheckpoint('m.keras', period=2)\n",
        [(2, _PERIOD.replace("ModelCheckpoint(", "keras.callbacks.ModelCheckpoint(", 1))],
    ),
    "positional_period_is_passed_by_keyword": (
        _IMPORT + "c = ModelCheckpoint('w.weights.h5', 'val_loss', 0, True, True, 'auto', 3)\n",
        _IMPORT + "import parallel_keras.callbacks\n\n"
        # Longer than 79 characters, and so are its arguments: one a line.
        "c = parallel_keras.callbacks.ModelCheckpoint(\n"
        "    'w.weights.h5',\n"
        "    monitor='val_loss',\n"
        "    verbose=0,\n"
        "    save_best_only=True,\n"
        "    save_weights_only=True,\n"
        "    mode='auto',\n"
        "    period=3\n"
        ")\n",
        [
            (
                2,
                _PERIOD + "; passed monitor, verbose, save_best_only, save_weights_only, mode, "
                "period by keyword (Keras 3 reordered them)",
            )
        ],
    ),
    "path_computed_at_run_time": (
        _IMPORT + "c = ModelCheckpoint(checkpoint_path, 'val_acc', 1)\n",
        _IMPORT + "import parallel_keras.callbacks\n\n"
        # Longer than 79 characters: the arguments on one line of their own.
        "c = parallel_keras.callbacks.ModelCheckpoint(\n"
        "    checkpoint_path, monitor='val_acc', verbose=1\n"
        ")\n",
        [
            (
                2,
                "`ModelCheckpoint(<path computed at run time>)` -> "
                "`parallel_keras.callbacks.ModelCheckpoint`: it accepts any suffix Keras 2 "
                "accepted and writes the format Keras 3 needs",
            )
        ],
    ),
    "tf_keras_spelling": (
        "from tensorflow.keras.callbacks import ModelCheckpoint\n"
        "c = ModelCheckpoint('w.h5', save_weights_only=True)\n",
        "from tensorflow.keras.callbacks import ModelCheckpoint\n"
        + _WEIGHTS_NOTE.format(was="w.h5")
        + "c = ModelCheckpoint('w.weights.h5', save_weights_only=True)\n",
        [],
    ),
    "legacy_parallel_model_checkpoint_takes_the_template_first": (
        "c = ParallelModelCheckpoint(template, 'best.hdf5', save_weights_only=True)\n",
        _WEIGHTS_NOTE.format(was="best.hdf5") + "c = ParallelModelCheckpoint(\n"
        "    template, 'best.weights.h5', save_weights_only=True\n"
        ")\n",
        [],
    ),
}


@pytest.mark.parametrize("before, after, recorded", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, recorded):
    result = check_rules(before, after, *_RULES)
    assert changes(result, checkpoints.RULE) == recorded
    assert not result.report.flags


@pytest.mark.parametrize(
    "source",
    [
        _IMPORT + "c = ModelCheckpoint('m.keras')\n",
        _IMPORT + "c = ModelCheckpoint('w.weights.h5', save_weights_only=True)\n",
        _IMPORT + "c = ModelCheckpoint(*args, **kwargs)\n",
        # Not Keras's class: a project's own, unknown to the scan.
        "c = MyCheckpoint('w.hdf5', save_weights_only=True, period=2)\n",
        # Keras's save_freq is kept as written.
        _IMPORT + "c = ModelCheckpoint('m.keras', save_freq=100)\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, *_RULES)
    assert not result.report.changes and not result.report.flags


def test_the_projects_own_checkpoint_class_gets_the_weights_suffix():
    # A class of the project re-implementing Keras 2's ModelCheckpoint:
    # filepath first, save_weights_only fifth (what the project scan finds).
    project = project_lib.Project(checkpoint_classes={"PeriodicCheckpoint": (0, 4)})
    before = "c = PeriodicCheckpoint('w.hdf5', 'val_loss', 0, False, True)\n"
    after = (
        "# parallel-keras migrate: Keras 3 needs this suffix: PeriodicCheckpoint\n"
        "#   saves these weights with save_weights, which writes only\n"
        "#   '.weights.h5' files in Keras 3 (was 'w.hdf5').\n"
        "c = PeriodicCheckpoint('w.weights.h5', 'val_loss', 0, False, True)\n"
    )
    check_rules(before, after, *_RULES, project=project)
    # Saving whole models, it keeps its path.
    whole = "c = PeriodicCheckpoint('m.hdf5', 'val_loss', 0, False, False)\n"
    check_rules(whole, whole, *_RULES, project=project)


_MODE_CASES = {
    "accuracy_is_maximized": (
        "import keras\ne = keras.callbacks.EarlyStopping(monitor='val_acc', patience=3)\n",
        "import keras\ne = keras.callbacks.EarlyStopping(monitor='val_acc', mode='max', patience=3)\n",
        "mode='max' for monitor='val_acc'",
    ),
    "auto_is_replaced": (
        "from keras.callbacks import ReduceLROnPlateau\n"
        "r = ReduceLROnPlateau(monitor='val_mae', mode='auto')\n",
        "from keras.callbacks import ReduceLROnPlateau\n"
        "r = ReduceLROnPlateau(monitor='val_mae', mode='min')\n",
        "mode='min' for monitor='val_mae'",
    ),
    "checkpoint_after_its_filepath": (
        _IMPORT + "c = ModelCheckpoint('best.keras', monitor='acc')\n",
        _IMPORT + "c = ModelCheckpoint('best.keras', monitor='acc', mode='max')\n",
        "mode='max' for monitor='acc'",
    ),
}


@pytest.mark.parametrize("before, after, says", _MODE_CASES.values(), ids=_MODE_CASES.keys())
def test_monitor_mode_is_what_keras2_chose(before, after, says):
    result = check_rules(before, after, checkpoints.MonitorModeRule)
    [(line, message)] = changes(result, "callback modes")
    assert line == 2
    assert message == (
        f"{says}: what Keras 2's mode='auto' chose; Keras 3 raises when the metric has no direction"
    )


@pytest.mark.parametrize(
    "source",
    [
        "import keras\ne = keras.callbacks.EarlyStopping(monitor='val_loss')\n",
        "import keras\ne = keras.callbacks.EarlyStopping(monitor='val_acc', mode='min')\n",
        "import keras\ne = keras.callbacks.EarlyStopping(monitor=name)\n",
        # Positional arguments past the filepath: where mode goes is unsure.
        _IMPORT + "c = ModelCheckpoint('m.keras', 'val_acc')\n",
        "e = EarlyStopping(monitor='val_acc')\n",  # Not imported from Keras.
    ],
)
def test_monitor_mode_left_alone(source):
    result = check_rules(source, source, checkpoints.MonitorModeRule)
    assert not result.report.changes and not flags(result, "callback modes")
