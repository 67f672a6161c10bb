# SPDX-License-Identifier: Apache-2.0
"""A project's own copy of multi_gpu_model and of ModelCheckpoint.

`projects/vendored_multi_gpu/` vendors Keras 2's multi_gpu_model
(`utils/multi_gpu.py`, tf.device towers) and a checkpoint callback that
re-implements Keras 2's `on_epoch_end`, takes `period=`, and picks the
template as `layers[-2]` in `set_model`. Migrated as a folder, it runs on 4
simulated devices with no hand edit and saves what Keras 2 saved.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.cli import migrate as migrate_cli

PROJECT = pathlib.Path(__file__).parent / "projects" / "vendored_multi_gpu"

_RUN = """
import runpy, sys
import parallel_keras
parallel_keras.simulate_devices(4)
sys.path.insert(0, ".")
runpy.run_path("train.py", run_name="__main__")
"""


def _migrated(tmp_path) -> pathlib.Path:
    out = tmp_path / "out"
    assert migrate_cli.main([str(PROJECT), "-o", str(out)]) == 0
    return out


def test_callers_get_parallel_keras_and_the_vendored_towers_stay(tmp_path):
    out = _migrated(tmp_path)
    train = (out / "train.py").read_text()
    assert "from parallel_keras import multi_gpu_model" in train
    # Split: longer than train.py's own lines.
    assert "(\n    'weights-{epoch:02d}.weights.h5', save_weights_only=True, period=2\n)" in train
    assert "'model-{epoch:02d}.hdf5', period=1" in train  # model.save takes .hdf5.
    # The vendored copy is no longer called: its towers are not placements.
    vendored = (PROJECT / "utils" / "multi_gpu.py").read_text()
    assert (out / "utils" / "multi_gpu.py").read_text() == vendored
    callbacks = (out / "utils" / "callbacks.py").read_text()
    assert "self.template_model = model.template if hasattr(model, 'template')" in callbacks
    assert "class PeriodicCheckpoint(parallel_keras.callbacks.ModelCheckpoint):" in callbacks


def test_single_file_without_the_folder_flags_the_foreign_multi_gpu_model():
    source = (PROJECT / "train.py").read_text()
    result = migrate.migrate_source(source, "train.py")
    assert "from utils.multi_gpu import multi_gpu_model" in result.migrated
    assert any(
        "from parallel_keras import multi_gpu_model" in flag.action for flag in result.report.flags
    )


def test_same_file_definition_is_rewired():
    source = textwrap.dedent("""\
        import tensorflow as tf

        def multi_gpu_model(model, gpus):
            with tf.device('/cpu:0'):
                return tf.keras.layers.Dense(1)(model.inputs[0])

        parallel = multi_gpu_model(model, 2)
        """)
    result = migrate.migrate_source(source)
    assert "parallel = parallel_keras.multi_gpu_model(model, 2)" in result.migrated
    assert "with tf.device('/cpu:0'):" in result.migrated
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated


@pytest.mark.subprocess
def test_migrated_project_runs_on_4_devices_and_saves_the_template(tmp_path):
    out = _migrated(tmp_path)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [sys.executable, "-c", _RUN], cwd=out, env=env, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr[-4000:]
    # period=2 over 4 epochs, as Keras 2 did; weights of the template.
    assert sorted(p.name for p in out.glob("weights-*")) == [
        "weights-02.weights.h5",
        "weights-04.weights.h5",
    ]
    assert len(list(out.glob("model-*.hdf5"))) == 4
    # A ModelCheckpoint subclass re-implementing Keras 2's on_epoch_end.
    assert sorted(p.name for p in out.glob("periodic-*")) == ["periodic-03.weights.h5"]
    template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    template.load_weights(out / "weights-04.weights.h5")
    final = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    final.load_weights(out / "final.weights.h5")
    for got, want in zip(template.get_weights(), final.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-6)
