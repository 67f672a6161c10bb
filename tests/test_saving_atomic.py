# SPDX-License-Identifier: Apache-2.0
"""A process killed (SIGKILL) in the middle of a checkpoint save.

The writer blocks halfway through writing the second checkpoint's bytes (the
HDF5 file is built in memory, then written); the test kills it there. The first checkpoint must be intact and load on one device,
the half-written file must be a temporary sibling, and the next save to that
path removes it (its writer is dead), never a live writer's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from helpers import load_in_fresh_process, wait_for_line

WRITER = """
import json, os, sys, time
import parallel_keras
parallel_keras.simulate_devices(2)
import h5py, keras, numpy as np
from parallel_keras.testing import legacy_files

folder, callback_kind = sys.argv[1], sys.argv[2]
path = os.path.join(folder, "ckpt.weights.h5")
template = legacy_files.functional_template()
parallel = parallel_keras.multi_gpu_model(template, gpus=2)
parallel.compile(optimizer="sgd", loss="mse")
if callback_kind == "parallel_keras":
    checkpoint = parallel_keras.ParallelModelCheckpoint(
        template, path, save_weights_only=True)
else:
    checkpoint = keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
rows = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
targets = np.zeros((8, 3), "float32")
parallel.fit(rows, targets, epochs=1, verbose=0, callbacks=[checkpoint])
with open(os.path.join(folder, "first.json"), "w") as file:
    json.dump(template.predict(rows, verbose=0).tolist(), file)

from parallel_keras.saving import atomic
def stall(path, data):
    with open(path, "xb") as file:
        file.write(data[: len(data) // 2])
        file.flush()
        print("MID-SAVE", flush=True)  # The test waits for this line...
        time.sleep(600)  # ...and kills the writer here, halfway through the file.
atomic._write_bytes = stall
parallel.fit(rows, targets, epochs=1, verbose=0, callbacks=[checkpoint])
"""


def _kill_mid_save(folder, callback_kind):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(folder), callback_kind],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Waits on the condition (the writer says it is mid-save), not on a clock;
    # the timeout only catches a writer that hangs before the save.
    reached, output = wait_for_line(writer, "MID-SAVE", timeout=600)
    if not reached:
        writer.kill()
        writer.wait()
        raise AssertionError(f"writer never reached the save:\n{output}")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL


# "keras": the README promises a stock `keras.callbacks.ModelCheckpoint` given
# to `parallel.fit` saves the same file, through the same atomic write.
@pytest.mark.subprocess
@pytest.mark.parametrize("callback_kind", ["parallel_keras", "keras"])
def test_kill_during_save_leaves_previous_checkpoint(tmp_path, callback_kind):
    _kill_mid_save(tmp_path, callback_kind)
    first = json.loads((tmp_path / "first.json").read_text())
    path = str(tmp_path / "ckpt.weights.h5")
    # The half-written file was a temporary sibling, never the checkpoint.
    assert [n for n in os.listdir(tmp_path) if ".tmp-" in n]
    import numpy as np

    rows = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    loaded = load_in_fresh_process({"ckpt": ("functional", path)}, rows=rows)["ckpt"]
    np.testing.assert_allclose(loaded[0], first, atol=1e-6)

    # The next save to that path removes what the killed writer left.
    from parallel_keras.saving import atomic
    from parallel_keras.testing import legacy_files

    atomic.save_weights(legacy_files.functional_template(), path)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.weights.h5", "first.json"]


@pytest.mark.subprocess
def test_a_live_writers_temporary_is_kept_and_a_dead_ones_removed(tmp_path):
    from parallel_keras.saving import paths

    target = str(tmp_path / "ckpt.weights.h5")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live = tmp_path / f".ckpt.tmp-{sleeper.pid}-{paths._HOST_TAG}abcd.weights.h5"
        other_host = tmp_path / ".ckpt.tmp-1234567-ffffabcd.weights.h5"
        other_target = tmp_path / f".other.tmp-{sleeper.pid}-{paths._HOST_TAG}abcd.weights.h5"
        for stale in (live, other_host, other_target):
            stale.write_bytes(b"half a file")
        assert paths.remove_stale_temporaries(target) == []
    finally:
        sleeper.kill()
        sleeper.wait()
    assert paths.remove_stale_temporaries(target) == [str(live)]
    assert sorted(os.listdir(tmp_path)) == sorted([other_host.name, other_target.name])


def test_replacing_a_file_keeps_its_permissions(tmp_path):
    from parallel_keras.saving import atomic
    from parallel_keras.testing import legacy_files

    path = tmp_path / "shared.keras"
    model = legacy_files.sequential_template()
    atomic.save_model(model, path)
    os.chmod(path, 0o640)
    before = path.read_bytes()
    model.layers[0].kernel.assign(model.layers[0].kernel + 1.0)
    atomic.save_model(model, path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert path.read_bytes() != before


def test_an_error_while_writing_names_the_users_path(tmp_path):
    from parallel_keras.saving import atomic

    target = tmp_path / "model.keras"
    target.write_bytes(b"previous model")

    def write(temporary):  # Fails naming the temporary, as Keras's errors do.
        raise ValueError(f"Invalid filepath extension. Received: filepath={temporary}")

    with pytest.raises(ValueError) as caught:
        atomic.atomic_write(target, write)
    assert str(target) in str(caught.value) and ".tmp-" not in str(caught.value)

    def fail_in_os(temporary):
        open(os.path.join(temporary, "member"), "wb").close()

    with pytest.raises(FileNotFoundError) as caught:
        atomic.atomic_write(target, fail_in_os)
    assert caught.value.filename == str(target)
    assert ".tmp-" not in str(caught.value)
    assert os.listdir(tmp_path) == ["model.keras"]
    assert target.read_bytes() == b"previous model"


def _link_writers():
    """(name, suffix, save(model, path)) for each way parallel_keras writes a file."""
    import numpy as np

    import parallel_keras

    def checkpoint(parallel, path):
        parallel.fit(
            np.zeros((4, 6), "float32"),
            np.zeros((4, 3), "float32"),
            epochs=1,
            verbose=0,
            callbacks=[
                parallel_keras.ParallelModelCheckpoint(
                    parallel.template, path, save_weights_only=True
                )
            ],
        )

    return [
        ("save_keras", ".keras", lambda parallel, path: parallel.save(path)),
        ("save_h5", ".h5", lambda parallel, path: parallel.save(path)),
        ("save_weights", ".weights.h5", lambda parallel, path: parallel.save_weights(path)),
        ("save_weights_h5", ".h5", lambda parallel, path: parallel.save_weights(path)),
        ("checkpoint", ".weights.h5", checkpoint),
    ]


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling_link"])
@pytest.mark.parametrize("writer", range(5), ids=[w[0] for w in _link_writers()])
def test_a_save_through_a_symlink_replaces_its_target_and_keeps_the_link(
    tmp_path, writer, dangling
):
    import numpy as np

    import parallel_keras
    from parallel_keras.testing import legacy_files

    _, suffix, save = _link_writers()[writer]
    (tmp_path / "runs").mkdir()
    target, link = tmp_path / "runs" / f"model{suffix}", tmp_path / f"latest{suffix}"
    link.symlink_to(os.path.join("runs", f"model{suffix}"))  # Relative, as `ln -s` makes.
    if not dangling:
        legacy_files.functional_template().save_weights(str(tmp_path / "old.weights.h5"))
        target.write_bytes((tmp_path / "old.weights.h5").read_bytes())
    template = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile("sgd", "mse")
    save(parallel, str(link))

    assert link.is_symlink() and os.readlink(link) == os.path.join("runs", f"model{suffix}")
    assert sorted(os.listdir(tmp_path / "runs")) == [f"model{suffix}"]
    fresh = legacy_files.functional_template()
    parallel_keras.load_weights(fresh, str(target))
    for expected, loaded in zip(template.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(loaded, expected)


@pytest.mark.parametrize("length", [238, 247, 255])
def test_a_file_name_legal_on_the_filesystem_is_saved_whatever_its_length(tmp_path, length):
    import keras

    import parallel_keras
    from parallel_keras.saving import atomic, paths

    name = "w" * (length - len(".weights.h5")) + ".weights.h5"
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    atomic.save_weights(model, tmp_path / name)
    atomic.save_weights(model, tmp_path / name)  # Over the first one.
    assert os.listdir(tmp_path) == [name]
    fresh = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    parallel_keras.load_weights(fresh, tmp_path / name)
    for got, want in zip(fresh.get_weights(), model.get_weights()):
        assert (got == want).all()
    # A temporary of a dead writer of that long name is still found and removed.
    stale = paths.temporary_path(tmp_path / name).replace(f".tmp-{os.getpid()}-", ".tmp-999999999-")
    open(stale, "wb").close()
    assert paths.remove_stale_temporaries(tmp_path / name) == [stale]
