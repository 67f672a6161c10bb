# SPDX-License-Identifier: Apache-2.0
"""A backup or checkpoint never replaces a finite state with a non-finite one.

A first `fit` on finite rows writes the file; a second on rows holding a
NaN must leave it byte for byte, keep it after training ends, and say so
once, with `TerminateOnNaN` absent, before the callback or after it.
"""

import logging
import os

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras.saving import finite
from parallel_keras.testing import legacy_files

ROWS_X = np.random.default_rng(0).normal(size=(16, 6)).astype("float32")
ROWS_Y = np.random.default_rng(1).normal(size=(16, 3)).astype("float32")
NAN_X = ROWS_X.copy()
NAN_X[5, 2] = np.nan  # In the second batch of 4 rows.
NAN_FIRST_X = ROWS_X.copy()
NAN_FIRST_X[0, 2] = np.nan  # In the first batch: no finite state after it.

WARNING = "never replaces a finite state with a non-finite one"


def _parallel():
    keras.utils.set_random_seed(3)
    template = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    return template, parallel


def _writer(kind, folder, template, first):
    """The callback under test and the file it writes."""
    if kind.startswith("backup"):
        save_freq = 1 if kind == "backup_every_batch" else "epoch"
        backup = parallel_keras.BackupAndRestore(
            os.path.join(folder, "backup"), save_freq=save_freq, delete_checkpoint=not first
        )
        return backup, os.path.join(folder, "backup", "latest.npz")
    path = os.path.join(folder, "template.weights.h5")
    return parallel_keras.ParallelModelCheckpoint(template, path, save_weights_only=True), path


@pytest.mark.parametrize("kind", ["backup_every_batch", "backup_every_epoch", "checkpoint"])
@pytest.mark.parametrize("terminate", ["alone", "terminate_first", "terminate_last"])
def test_a_nan_never_replaces_the_last_finite_state(tmp_path, caplog, kind, terminate):
    template, parallel = _parallel()
    writer, path = _writer(kind, str(tmp_path), template, first=True)
    parallel.fit(
        ROWS_X, ROWS_Y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[writer]
    )
    good = open(path, "rb").read()

    writer, _ = _writer(kind, str(tmp_path), template, first=False)
    callbacks = {
        "alone": [writer],
        "terminate_first": [keras.callbacks.TerminateOnNaN(), writer],
        "terminate_last": [writer, keras.callbacks.TerminateOnNaN()],
    }[terminate]
    with caplog.at_level(logging.WARNING):
        history = parallel.fit(
            NAN_FIRST_X,
            ROWS_Y,
            batch_size=4,
            epochs=3,
            shuffle=False,
            verbose=0,
            callbacks=callbacks,
        )
    assert not np.isfinite(template.get_weights()[0]).all()  # The run did go NaN.
    with open(path, "rb") as file:
        assert file.read() == good  # Kept, byte for byte, even after fit ended.
    assert caplog.text.count(WARNING) == 1, caplog.text
    if terminate != "alone":
        assert len(history.history["loss"]) == 1  # Stopped in its first epoch.


def test_a_resume_from_the_kept_backup_restores_finite_weights(tmp_path):
    template, parallel = _parallel()
    backup = parallel_keras.BackupAndRestore(tmp_path / "backup", save_freq=1)
    parallel.fit(
        NAN_X, ROWS_Y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[backup]
    )
    assert (tmp_path / "backup" / "latest.npz").exists()  # Kept: the run went NaN.

    template, parallel = _parallel()
    resumed = parallel_keras.BackupAndRestore(tmp_path / "backup", save_freq=1)
    seen = []
    probe = keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: seen.append([w.copy() for w in template.get_weights()])
    )
    parallel.fit(
        ROWS_X, ROWS_Y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[resumed, probe]
    )
    assert resumed.restored_from["epoch"] == 0 and resumed.restored_from["batch"] == 1
    assert all(np.isfinite(w).all() for w in seen[0])


def test_first_non_finite_names_the_array():
    assert finite.first_non_finite([("a", np.ones(2)), ("b", np.array([1.0, np.inf]))]) == "b"
    assert finite.first_non_finite([("counter", np.array(3, "int64"))]) is None
    assert finite.non_finite_loss({"loss": float("nan")}) is not None
    assert finite.non_finite_loss({"loss": 0.5}) is None
