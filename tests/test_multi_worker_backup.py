# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.BackupAndRestore`: weights, optimizer state, epoch and batch.

In-process tests interrupt `fit` with an exception; the process tests kill a
worker with SIGKILL (`kill -9`) mid-epoch under `parallel-keras launch
--max-restarts 1` and compare the final weights with an uninterrupted run
, including a group that continues with fewer workers.
"""

import os
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

import parallel_keras

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
sys.path.insert(0, SCRIPTS)

import common  # noqa: E402
import helpers  # noqa: E402

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

GLOBAL_BATCH = 12  # As in multi_worker_scripts/resume.py.
ROWS = 48
EPOCHS = 3


class Crash(Exception):
    pass


class CrashAt(keras.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at = (epoch, batch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise Crash()


def adam_model():
    model = common.build_template()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    return model


def uninterrupted_weights():
    x, y = common.data_rows(ROWS)
    model = adam_model()
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    return model.get_weights()


def test_interrupted_mid_epoch_resumes_at_the_backed_up_batch(tmp_path):
    x, y = common.data_rows(ROWS)
    model = adam_model()
    backup = parallel_keras.BackupAndRestore(tmp_path / "backup", save_freq=1)
    with pytest.raises(Crash):
        model.fit(
            x,
            y,
            batch_size=GLOBAL_BATCH,
            epochs=EPOCHS,
            shuffle=False,
            verbose=0,
            callbacks=[backup, CrashAt(1, 2)],
        )
    assert os.listdir(tmp_path / "backup") == ["latest.npz"]

    resumed = adam_model()  # A new process would start from scratch too.
    backup = parallel_keras.BackupAndRestore(tmp_path / "backup", save_freq=1)
    batches = []
    counter = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: batches.append(batch)
    )
    history = resumed.fit(
        x,
        y,
        batch_size=GLOBAL_BATCH,
        epochs=EPOCHS,
        shuffle=False,
        verbose=0,
        callbacks=[backup, counter],
    )
    assert backup.restored_from["epoch"] == 1 and backup.restored_from["batch"] == 2
    assert len(history.history["loss"]) == 2  # Epochs 1 (from batch 2) and 2.
    assert batches == [0, 1, 2, 3, 0, 1, 2, 3]  # Batches 0-1 of epoch 1 skipped.
    for got, want in zip(resumed.get_weights(), uninterrupted_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)
    # Optimizer state came back too: Adam's step count is the full run's.
    assert int(resumed.optimizer.iterations.numpy()) == EPOCHS * ROWS // GLOBAL_BATCH
    assert not (tmp_path / "backup").exists()  # Deleted after success.
    # Keras's private start epoch is reset: a later fit starts at epoch 0.
    again = resumed.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
    assert len(again.history["loss"]) == 1


def test_backup_of_another_model_is_refused_and_changes_nothing(tmp_path):
    x, y = common.data_rows(ROWS)
    model = adam_model()
    model.fit(
        x,
        y,
        batch_size=GLOBAL_BATCH,
        epochs=1,
        verbose=0,
        callbacks=[parallel_keras.BackupAndRestore(tmp_path, delete_checkpoint=False)],
    )
    before = (tmp_path / "latest.npz").read_bytes()
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    other.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    other.build((None, 4))
    weights = [w.copy() for w in other.get_weights()]
    with pytest.raises(ValueError, match=r"was written for another model\. Received: 4 model"):
        other.fit(
            x,
            y,
            batch_size=GLOBAL_BATCH,
            epochs=1,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path)],
        )
    for got, want in zip(other.get_weights(), weights):
        np.testing.assert_array_equal(got, want)
    assert (tmp_path / "latest.npz").read_bytes() == before


def test_truncated_latest_restores_the_previous_backup_with_a_warning(tmp_path, caplog):
    x, y = common.data_rows(ROWS)
    model = adam_model()
    model.fit(
        x,
        y,
        batch_size=GLOBAL_BATCH,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[
            parallel_keras.BackupAndRestore(
                tmp_path, double_checkpoint=True, delete_checkpoint=False
            )
        ],
    )
    latest = tmp_path / "latest.npz"
    latest.write_bytes(latest.read_bytes()[:100])
    backup = parallel_keras.BackupAndRestore(tmp_path, double_checkpoint=True)
    with caplog.at_level("WARNING"):
        history = adam_model().fit(
            x, y, batch_size=GLOBAL_BATCH, epochs=3, shuffle=False, verbose=0, callbacks=[backup]
        )
    assert backup.restored_from["path"] == str(tmp_path / "previous.npz")
    assert backup.restored_from["epoch"] == 1 and len(history.history["loss"]) == 2
    assert f"cannot read the backup {latest} (not a complete .npz archive" in caplog.text


def test_a_backup_that_cannot_be_written_keeps_the_last_and_the_next_one_works(tmp_path):
    x, y = common.data_rows(ROWS)
    model = adam_model()
    model.fit(
        x,
        y,
        batch_size=GLOBAL_BATCH,
        epochs=1,
        shuffle=False,
        verbose=0,
        callbacks=[parallel_keras.BackupAndRestore(tmp_path, delete_checkpoint=False)],
    )
    latest = tmp_path / "latest.npz"
    before = latest.read_bytes()
    with helpers.file_size_limit(len(before) // 2):
        with pytest.raises(
            RuntimeError,
            match=(
                rf"so {latest} still holds the last backup\. Received: File too large "
                rf"while writing {latest} \(epoch 1, batch 1\)\. Free space"
            ),
        ):
            model.fit(
                x,
                y,
                batch_size=GLOBAL_BATCH,
                epochs=2,
                shuffle=False,
                verbose=0,
                callbacks=[
                    parallel_keras.BackupAndRestore(tmp_path, save_freq=1, delete_checkpoint=False)
                ],
            )
    assert latest.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["latest.npz"]  # No temporary left.
    backup = parallel_keras.BackupAndRestore(tmp_path, save_freq=1, delete_checkpoint=False)
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=2, shuffle=False, verbose=0, callbacks=[backup])
    assert backup.restored_from["epoch"] == 1  # The last backup was loadable.
    assert latest.read_bytes() != before  # The next backups were written.


def test_backup_dir_replaced_by_a_file_mid_run_is_named(tmp_path):
    x, y = common.data_rows(ROWS)
    folder = tmp_path / "backup"

    class ReplaceFolder(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            shutil.rmtree(folder)
            folder.write_bytes(b"someone else's file")

    with pytest.raises(
        ValueError,
        match=(
            rf"Backups need a folder this process can write\. Received: "
            rf"backup_dir='{folder}', and '{folder}' is a regular file.*move that file away"
        ),
    ):
        adam_model().fit(
            x,
            y,
            batch_size=GLOBAL_BATCH,
            epochs=2,
            verbose=0,
            callbacks=[ReplaceFolder(), parallel_keras.BackupAndRestore(folder)],
        )
    assert folder.read_bytes() == b"someone else's file"


def launch(tmp_path, *launch_args, script_args=(), timeout=400):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [
            *helpers.LAUNCH,
            *launch_args,
            os.path.join(SCRIPTS, "resume.py"),
            "--out",
            str(tmp_path),
            *script_args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    process.results = helpers.worker_records(process.stdout, "RESULT")
    return process


def describe(process):
    return f"exit {process.returncode}\n{process.stdout[-3000:]}\n{process.stderr[-3000:]}"


def assert_resumed_like_uninterrupted(process, workers):
    assert process.returncode == 0, describe(process)
    assert re.search(r"worker \d \(pid \d+\) was killed by SIGKILL", process.stderr)
    assert sorted(process.results) == list(range(workers)), describe(process)
    expected = uninterrupted_weights()
    for result in process.results.values():
        assert result["restart"] == 1 and result["workers"] == workers
        restored = result["restored_from"]
        # Killed at epoch 1 before batch 2; batch 1's backup may still have
        # been in flight on the chief when the launcher stopped it.
        assert restored["epoch"] == 1 and restored["batch"] in (1, 2), restored
        for got, want in zip(result["weights"], expected):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)


@pytest.mark.parametrize("workers", [1, 2], ids=["1-process", "2-workers"])
def test_kill_9_mid_epoch_then_restart_trains_like_an_uninterrupted_run(tmp_path, workers):
    process = launch(
        tmp_path,
        "--workers",
        str(workers),
        "--max-restarts",
        "1",
        script_args=["--kill-worker", str(workers - 1)],
    )
    assert_resumed_like_uninterrupted(process, workers)
    if workers == 1:
        assert process.results[0]["restored_from"]["batch"] == 2
    assert not (tmp_path / "backup").exists()  # Deleted after success.


def test_group_continues_with_the_survivors_and_logs_each_worker(tmp_path):
    logs = tmp_path / "logs"
    process = launch(
        tmp_path,
        "--workers",
        "3",
        "--min-workers",
        "2",
        "--max-restarts",
        "1",
        "--log-dir",
        str(logs),
        script_args=["--kill-worker", "2"],
    )
    # 3 workers x 2 devices (batch 12 -> 2 per replica), then 2 x 2 (3 each).
    assert_resumed_like_uninterrupted(process, workers=2)
    assert all(r["replicas"] == 4 for r in process.results.values())
    assert "restarting the group with 2 worker(s)" in process.stderr
    assert sorted(os.listdir(logs)) == ["worker-0.log", "worker-1.log", "worker-2.log"]
    assert "KILLING worker 2" in (logs / "worker-2.log").read_text()
    worker_0 = (logs / "worker-0.log").read_text()
    assert "--- attempt 2 ---" in worker_0 and "RESULT" in worker_0
    summary = re.search(r"summary: (.*)\.$", process.stdout, re.M).group(1)
    assert re.fullmatch(r"worker 0: exit 0, [\d.]+ s; worker 1: exit 0, [\d.]+ s", summary), summary


# --- Resuming on another replica count and batch size ---

RESUME_ROWS = 512  # 4 batches of 128 per epoch.


def parallel_adam(gpus, steps=None):
    template = common.build_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(
        optimizer=keras.optimizers.Adam(0.01, gradient_accumulation_steps=steps), loss="mse"
    )
    return template, parallel


@pytest.mark.parametrize(
    "before, after",
    [((4, 128, None), (2, 64, 2)), ((2, 64, 2), (4, 128, None)), ((2, 32, 4), (4, 64, 2))],
    ids=["4x32-to-2x32x2", "2x32x2-to-4x32", "2x16x4-to-4x16x2"],
)
def test_resume_on_another_replica_count_keeping_the_global_batch(tmp_path, before, after):
    x, y = common.data_rows(RESUME_ROWS)
    reference, reference_parallel = parallel_adam(4)
    reference_parallel.fit(x, y, batch_size=128, epochs=3, shuffle=False, verbose=0)

    gpus, batch_size, steps = before
    _, parallel = parallel_adam(gpus, steps)
    # Killed before batch 2 of epoch 1 (rows 0-255 of it trained).
    crash_batch = 256 // batch_size
    with pytest.raises(Crash):
        parallel.fit(
            x,
            y,
            batch_size=batch_size,
            epochs=3,
            shuffle=False,
            verbose=0,
            callbacks=[
                parallel_keras.BackupAndRestore(tmp_path, save_freq=steps or 1),
                CrashAt(1, crash_batch),
            ],
        )
    backup_bytes = (tmp_path / "latest.npz").read_bytes()

    gpus, batch_size, steps = after
    template, parallel = parallel_adam(gpus, steps)
    backup = parallel_keras.BackupAndRestore(tmp_path, save_freq=steps or 1)
    trained = []
    history = parallel.fit(
        x,
        y,
        batch_size=batch_size,
        epochs=3,
        shuffle=False,
        verbose=0,
        callbacks=[
            backup,
            keras.callbacks.LambdaCallback(
                on_train_batch_end=lambda batch, logs: trained.append(batch)
            ),
        ],
    )
    assert backup.restored_from["epoch"] == 1 and backup.restored_from["rows"] == 256
    assert backup.restored_from["replicas"] == before[0]
    assert len(history.history["loss"]) == 2
    per_epoch = RESUME_ROWS // batch_size
    assert trained == list(range(per_epoch)) * 2  # Skipped batches are reported too.
    for got, want in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)
    # Keras's meaning: updates, each of 128 rows.
    assert int(parallel.optimizer.iterations.numpy()) == 3 * RESUME_ROWS // 128
    assert backup_bytes  # The backup existed; it is deleted after success.
    assert not tmp_path.exists()


def test_resume_with_another_batch_size_skips_rows_and_says_so(tmp_path, caplog):
    x, y = common.data_rows(256)  # 8 batches of 32, or 4 of 64.
    model = adam_model()
    with pytest.raises(Crash):
        model.fit(
            x,
            y,
            batch_size=32,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path, save_freq=1), CrashAt(0, 4)],
        )
    resumed = adam_model()
    trained = []
    with caplog.at_level("WARNING"):
        resumed.fit(
            x,
            y,
            batch_size=64,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[
                parallel_keras.BackupAndRestore(tmp_path, save_freq=1),
                keras.callbacks.LambdaCallback(
                    on_train_batch_end=lambda batch, logs: trained.append(batch)
                ),
            ],
        )
    # 4 batches of 32 = 128 rows were trained: 2 batches of 64 are skipped,
    # not 4 (which would leave rows 128-255 of epoch 0 untrained).
    assert trained == [0, 1, 2, 3] * 2
    assert int(resumed.optimizer.iterations.numpy()) == 4 + 2 + 4
    assert (
        "global batch changed from 32 rows (the backup's) to 64: resuming after "
        "128 rows of epoch 0 (2 batch(es) of 64)"
    ) in caplog.text


def test_resume_at_an_epoch_start_with_another_batch_size_says_so(tmp_path, caplog):
    x, y = common.data_rows(ROWS)
    model = adam_model()
    with pytest.raises(Crash):
        model.fit(
            x,
            y,
            batch_size=GLOBAL_BATCH,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path), CrashAt(1, 0)],
        )
    with caplog.at_level("WARNING"):
        adam_model().fit(
            x,
            y,
            batch_size=2 * GLOBAL_BATCH,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path)],
        )
    assert (
        f"global batch changed from {GLOBAL_BATCH} rows (the backup's) to {2 * GLOBAL_BATCH}"
    ) in caplog.text


def test_backup_between_updates_resumes_only_with_the_same_steps(tmp_path):
    x, y = common.data_rows(RESUME_ROWS)
    _, parallel = parallel_adam(2, 2)
    with pytest.raises(Crash):
        parallel.fit(
            x,
            y,
            batch_size=64,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path, save_freq=3), CrashAt(0, 4)],
        )
    before = (tmp_path / "latest.npz").read_bytes()
    template, parallel = parallel_adam(4)
    weights = [w.copy() for w in template.get_weights()]
    with pytest.raises(
        ValueError,
        match=(
            r"resumes only with the accumulation steps that wrote it\. Received: .* with 1 "
            r"of gradient_accumulation_steps=2 batches accumulated, and an optimizer with "
            r"gradient_accumulation_steps=None\. Resume with gradient_accumulation_steps=2"
        ),
    ):
        parallel.fit(
            x,
            y,
            batch_size=128,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[parallel_keras.BackupAndRestore(tmp_path, save_freq=1)],
        )
    assert (tmp_path / "latest.npz").read_bytes() == before
    for got, want in zip(template.get_weights(), weights):
        np.testing.assert_array_equal(got, want)


# --- Keeping the global batch under `launch` ---------------------


def one_process_weights(global_batch=16, epochs=3):
    x, y = common.data()
    model = adam_model()
    model.fit(x, y, batch_size=global_batch, epochs=epochs, shuffle=False, verbose=0)
    return model.get_weights()


def run_keep_batch(tmp_path, *launch_args, script_args=()):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [
            *helpers.LAUNCH,
            *launch_args,
            os.path.join(SCRIPTS, "keep_batch.py"),
            "--out",
            str(tmp_path),
            *script_args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    process.results = helpers.worker_records(process.stdout, "RESULT")
    return process


def test_two_workers_accumulating_train_like_one_process(tmp_path):
    # 2 workers x 2 devices x 2 rows = 8 rows per batch, 2 steps per update.
    process = run_keep_batch(tmp_path, "--workers", "2", script_args=["--per-replica", "2"])
    assert process.returncode == 0, describe(process)
    assert sorted(process.results) == [0, 1], describe(process)
    expected = one_process_weights()
    for result in process.results.values():
        assert (result["replicas"], result["batch_size"], result["steps"]) == (4, 8, 2)
        assert result["iterations"] == 3 * 64 // 16
        for got, want in zip(result["weights"], expected):
            np.testing.assert_allclose(np.array(got), want, atol=1e-5)


def test_survivors_keep_their_per_replica_batch_and_accumulate(tmp_path):
    # 2 workers x 2 devices x 4 rows = 16; worker 1 dies mid-epoch and the
    # survivor continues with 2 devices x 4 rows x 2 steps = 16 per update.
    process = run_keep_batch(
        tmp_path,
        "--workers",
        "2",
        "--min-workers",
        "1",
        "--max-restarts",
        "1",
        script_args=["--kill-worker", "1"],
    )
    assert process.returncode == 0, describe(process)
    assert "restarting the group with 1 worker(s)" in process.stderr
    assert sorted(process.results) == [0], describe(process)
    result = process.results[0]
    assert (result["replicas"], result["batch_size"], result["steps"]) == (2, 8, 2)
    assert result["restart"] == 1 and result["restored_from"]["epoch"] == 1
    assert result["restored_from"]["replicas"] == 4
    assert result["iterations"] == 3 * 64 // 16
    for got, want in zip(result["weights"], one_process_weights()):
        np.testing.assert_allclose(np.array(got), want, atol=1e-5)
