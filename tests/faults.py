# SPDX-License-Identifier: Apache-2.0
"""Disk faults for the bad-input table: a real full disk, a file-size limit.

A full disk is a 1 MiB tmpfs mounted for one row (the row is skipped, with
the reason, where this machine refuses the mount); a file-size limit
(RLIMIT_FSIZE) is set in a subprocess, since it holds for the whole process.
Each action saves once, makes the disk full (or the limit small), saves
twice more (both must fail with the error under test: the second failure
proves the first left no broken state behind), checks that the file is
byte-identical and loads with the first save's weights, then makes room and
saves again, and only then raises the first failure for the row to check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import psutil
import pytest

import parallel_keras
from parallel_keras.testing import legacy_files

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def full_disk(ws) -> str:
    """A fresh 1 MiB tmpfs, unmounted when the row ends: `{disk}`."""
    folder = tempfile.mkdtemp(prefix="full-disk-")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", folder],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        os.rmdir(folder)
        pytest.skip(
            f"a real full disk needs a tmpfs mount, which this machine refuses: "
            f"{mounted.stderr.strip()}"
        )
    ws.cleanup.callback(os.rmdir, folder)
    ws.cleanup.callback(subprocess.run, ["umount", folder], check=True)
    ws.placeholders["disk"] = folder
    return folder


def fill(folder: str, leave: int) -> str:
    """Fills the disk of `folder` until `leave` bytes (rounded to pages) stay free."""
    filler = os.path.join(folder, "filler.bin")
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(descriptor, b"\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(descriptor)
    os.truncate(filler, max(0, os.path.getsize(filler) - leave))
    return filler


def _weights_in(path: str) -> list[np.ndarray]:
    fresh = legacy_files.functional_template()
    parallel_keras.load_weights(fresh, path)
    return fresh.get_weights()


def save_on_a_full_disk(ws, save, name: str) -> None:
    """`save(ws, path)` on a full disk: see the module docstring."""
    disk = full_disk(ws)
    path = os.path.join(disk, name)
    original = ws.template.get_weights()
    save(ws, path)
    with open(path, "rb") as file:
        before = file.read()
    weights = ws.template.get_weights()
    # New weights: a failed save that wrote anyway could not go unseen.
    ws.template.set_weights([w + 1 for w in weights])
    filler = fill(disk, leave=len(before) // 2)
    failures = []
    for _ in range(2):
        try:
            save(ws, path)
        except OSError as error:
            failures.append(error)
    assert len(failures) == 2, f"a save fit on a full disk: {failures}"
    with open(path, "rb") as file:
        assert file.read() == before
    for expected, loaded in zip(weights, _weights_in(path)):
        np.testing.assert_array_equal(loaded, expected)
    assert sorted(os.listdir(disk)) == sorted([name, os.path.basename(filler)])
    os.remove(filler)
    save(ws, path)  # The next save in this process, once there is room.
    _weights_in(path)
    ws.template.set_weights(original)
    raise failures[0]


def fit_with_checkpoint(ws, path: str) -> None:
    """One epoch of the shared parallel model, checkpointing its weights to `path`."""
    checkpoint = parallel_keras.ParallelModelCheckpoint(
        ws.template, path, monitor="loss", save_weights_only=True
    )
    rows = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    targets = np.zeros((8, 3), "float32")
    ws.parallel.fit(rows, targets, batch_size=4, epochs=1, verbose=0, callbacks=[checkpoint])


# Runs in its own process: the file-size limit holds for the whole process.
_OVER_THE_LIMIT = textwrap.dedent("""
    import os, resource, sys
    import numpy as np
    import parallel_keras
    parallel_keras.simulate_devices(2)
    from parallel_keras.testing import legacy_files

    path, method = sys.argv[1], sys.argv[2]
    template = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    getattr(parallel, method)(path)
    before, weights = open(path, "rb").read(), template.get_weights()

    def load(path):
        fresh = legacy_files.functional_template()
        parallel_keras.load_weights(fresh, path)
        return fresh.get_weights()

    template.set_weights([w + 1 for w in weights])
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) // 2, resource.RLIM_INFINITY))
    failures = []
    for _ in range(2):
        try:
            getattr(parallel, method)(path)
        except OSError as error:
            failures.append(error)
    assert len(failures) == 2, failures
    assert open(path, "rb").read() == before
    assert all((a == b).all() for a, b in zip(load(path), weights))
    assert sorted(os.listdir(os.path.dirname(path))) == [os.path.basename(path)]
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    getattr(parallel, method)(path)  # The next save in this process.
    assert all((a == b + 1).all() for a, b in zip(load(path), weights))
    print(f"{type(failures[0]).__name__}: {failures[0]}")
    sys.exit(1)
""")


def save_over_the_file_size_limit(ws, method: str, name: str) -> subprocess.CompletedProcess:
    """`parallel.METHOD(path)` under RLIMIT_FSIZE, in a subprocess: `{limited}`."""
    folder = tempfile.mkdtemp(prefix="file-size-limit-")
    ws.cleanup.callback(shutil.rmtree, folder)
    path = os.path.join(folder, name)
    ws.placeholders["limited"] = folder
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-c", _OVER_THE_LIMIT, path, method],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def looping_link(ws) -> str:
    """`{loops}/a.keras` -> `b.keras` -> `a.keras`, outside the row's folder.

    Outside: the table's snapshot of the row's folder follows links.
    """
    folder = tempfile.mkdtemp(prefix="link-loop-")
    ws.cleanup.callback(shutil.rmtree, folder)
    ws.placeholders["loops"] = folder
    os.symlink("b.keras", os.path.join(folder, "a.keras"))
    os.symlink("a.keras", os.path.join(folder, "b.keras"))
    return os.path.join(folder, "a.keras")


# A worker that starts a child, says READY, and sleeps: both name the row's folder.
_SLEEPER = textwrap.dedent("""
    import os, subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", __file__])
    print("READY", flush=True)
    time.sleep(600)
""")


def kill_the_launcher(ws) -> subprocess.CompletedProcess:
    """`launch --workers 2` of a script with a child; SIGKILL to the launcher once both run.

    Returns the launcher's output once its workers, their children and the
    guards are gone (they hold its output pipes), or raises after 60 s.
    """
    script = ws.path("sleeper.py")
    with open(script, "w", encoding="utf-8") as file:
        file.write(_SLEEPER)
    ws.cleanup.callback(os.remove, script)  # The folder is compared after the row.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from parallel_keras.cli.main import run; run()",
            "launch",
            "--workers",
            "2",
            script,
        ],
        cwd=ws.dir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = 0
    for line in launcher.stdout:
        ready += "READY" in line
        if ready == 2:
            break
    launcher.kill()
    launcher.wait()
    # The guards hold the launcher's stderr, the workers and their children
    # its stdout: both close once every one of them is gone.
    out, err = launcher.communicate(timeout=60)
    # SIGKILL is delivered at once, but a process takes a moment to go.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        ws.dir in " ".join(process.info["cmdline"] or [])
        for process in psutil.process_iter(["cmdline"])
    ):
        time.sleep(0.1)
    return subprocess.CompletedProcess(launcher.args, launcher.returncode, out, err)


# --- migrate on hostile folders -------------------------------------------

_LEGACY = "from keras.utils import multi_gpu_model\nparallel = multi_gpu_model(model, gpus=2)\n"


def hostile_folder(ws, make) -> str:
    """`{dir}/hostile` with `good.py` (a legacy script) and whatever `make(folder)` adds.

    Removed when the row ends, so the row's folder compares equal.
    """
    folder = ws.path("hostile")
    os.mkdir(folder)
    ws.cleanup.callback(shutil.rmtree, folder)
    ws.cleanup.callback(os.chmod, folder, 0o755)  # Runs first: a read-only folder.
    with open(os.path.join(folder, "good.py"), "w", encoding="utf-8") as file:
        file.write(_LEGACY)
    make(folder)
    return folder


def make_fifo(folder):
    os.mkfifo(os.path.join(folder, "pipe.py"))


def make_long_sum(folder):
    with open(os.path.join(folder, "chain.py"), "w", encoding="utf-8") as file:
        file.write("total = " + " + ".join(["a"] * 5000) + "\n")


def make_huge(folder):
    with open(os.path.join(folder, "huge.py"), "w", encoding="utf-8") as file:
        file.write("x = 1\n" * 1_000_000)  # 6 MB.


def make_link_loop(folder):
    os.symlink("loop_b.py", os.path.join(folder, "loop_a.py"))
    os.symlink("loop_a.py", os.path.join(folder, "loop_b.py"))


def make_read_only_subfolder(folder):
    sub = os.path.join(folder, "ro")
    os.mkdir(sub)
    with open(os.path.join(sub, "train.py"), "w", encoding="utf-8") as file:
        file.write(_LEGACY)
    os.chmod(sub, 0o555)
    # Before the folder is removed: its read-only subfolder must be writable.
    return sub


def migrate_in_place_on_a_full_disk(ws) -> subprocess.CompletedProcess:
    """`migrate --in-place` of a script on a full disk, then again with room.

    The first run must leave the script and no `.orig`; the second (same
    process) migrates it and keeps the original as `.orig`.
    """
    disk = full_disk(ws)
    script = os.path.join(disk, "train.py")
    with open(script, "w", encoding="utf-8") as file:
        file.write(_LEGACY)
    filler = fill(disk, leave=0)
    failed = ws.migrate("--in-place", script)
    assert sorted(os.listdir(disk)) == ["filler.bin", "train.py"], os.listdir(disk)
    with open(script, encoding="utf-8") as file:
        assert file.read() == _LEGACY
    os.remove(filler)
    again = ws.migrate("--in-place", script)
    assert again.returncode == 0, again.stdout + again.stderr
    with open(script + ".orig", encoding="utf-8") as file:
        assert file.read() == _LEGACY
    with open(script, encoding="utf-8") as file:
        assert "parallel_keras" in file.read()
    return failed
