# SPDX-License-Identifier: Apache-2.0
"""Keras 2's 'acc' log keys keep working: the compiled metric is named 'acc'."""

from __future__ import annotations

import textwrap

import keras
import numpy as np

from parallel_keras import migrate

SCRIPT = textwrap.dedent("""\
    import keras
    from keras.callbacks import Callback, ModelCheckpoint, CSVLogger

    seen = []


    class LossHistory(Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((logs['acc'], logs.get('val_acc')))


    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer='sgd', metrics=['accuracy'])
    checkpoint = ModelCheckpoint('m-{epoch:02d}-{val_acc:.4f}.weights.h5', monitor='val_acc',
                                 save_best_only=True, save_weights_only=True)
    H = model.fit(x, y, epochs=2, validation_split=0.5, verbose=0,
                  callbacks=[checkpoint, LossHistory(), CSVLogger('log.csv')])
    curve = H.history['acc'], H.history['val_acc']
    """)


def test_accuracy_compiled_as_acc_when_the_script_reads_acc_keys():
    result = migrate.migrate_source(SCRIPT)
    assert "metrics=['acc']" in result.migrated
    # Every key the script reads stays as Keras 2 logged it.
    for key in (
        "logs['acc']",
        "logs.get('val_acc')",
        "{val_acc:.4f}",
        "monitor='val_acc'",
        "H.history['acc']",
        "H.history['val_acc']",
    ):
        assert key in result.migrated
    assert not result.report.flags
    assert [c.rule for c in result.report.changes].count("metric names") == 1
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


def test_migrated_script_runs_and_every_acc_key_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {
        "x": np.random.default_rng(0).random((8, 3)).astype("float32"),
        "y": np.eye(2)[[0, 1] * 4],
    }
    exec(migrate.migrate_source(SCRIPT).migrated, namespace)
    assert len(namespace["seen"]) == 2 and None not in namespace["seen"][0]
    assert len(namespace["curve"][1]) == 2
    assert sorted(p.name for p in tmp_path.glob("m-*.weights.h5"))
    assert "val_acc" in (tmp_path / "log.csv").read_text().splitlines()[0]


def test_no_change_without_acc_keys_or_without_accuracy():
    reads_accuracy = "model.compile(loss='mse', metrics=['accuracy'])\nh.history['val_accuracy']\n"
    assert migrate.migrate_source(reads_accuracy).migrated == reads_accuracy
    compiled_acc = "model.compile(loss='mse', metrics=['acc'])\nh.history['val_acc']\n"
    assert migrate.migrate_source(compiled_acc).migrated == compiled_acc


def test_both_spellings_are_flagged_and_nothing_renamed():
    source = (
        "model.compile(loss='mse', metrics=['accuracy'])\n"
        "a = h.history['val_acc']\nb = h.history['val_accuracy']\n"
    )
    result = migrate.migrate_source(source)
    assert "metrics=['accuracy']" in result.migrated
    assert [flag.rule for flag in result.report.flags] == ["metric names"]
    assert "one spelling" in result.report.flags[0].action
    assert keras  # The run test above uses real Keras.


def test_keys_read_in_another_file_of_the_folder_count(tmp_path):
    (tmp_path / "model.py").write_text(
        "def build(model):\n    model.compile(loss='mse', metrics=['accuracy'])\n"
    )
    (tmp_path / "train.py").write_text(
        "from keras.callbacks import EarlyStopping\nstop = EarlyStopping(monitor='val_acc')\n"
    )
    files = migrate.find_python_files([str(tmp_path)])
    project = migrate.scan_project(files)
    results = {rel: migrate.migrate_file(path, rel, project) for path, rel in files}
    assert "metrics=['acc']" in results["model.py"].migrated
    assert "metrics=['accuracy']" in migrate.migrate_file(str(tmp_path / "model.py")).migrated
