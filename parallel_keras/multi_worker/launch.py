"""The launcher: a training script as a group of worker processes.

`launch` starts one process per worker, each with its `TF_CONFIG`, through
`bootstrap` (which creates the multi-worker strategy before the script
runs). It prefixes each line a worker prints with `[worker I]`, and watches
the group: when a worker fails it stops the others at once (SIGTERM, then
SIGKILL after a grace period) and either restarts the whole group, up to
`max_restarts` times, or returns the first non-zero exit code.

Two modes, like `torchrun --nnodes/--node_rank`:

* `workers=N`: the whole cluster on this machine. Ports are picked on
  127.0.0.1 and every worker address is 127.0.0.1. (TensorFlow's own gRPC
  server still listens on all interfaces at that port, checked on TF 2.21;
  TF offers no listen-address setting, so firewall the ports if needed.)
* `hosts=["h1:port", "h2:port"], index=I`: this machine's worker of a real
  cluster; each machine runs its own launch with its own index.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import json
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import TextIO

from absl import logging

from parallel_keras.multi_worker import bootstrap
from parallel_keras.multi_worker import cluster
from parallel_keras.multi_worker import writes

RESTART_ENV = "PARALLEL_KERAS_RESTART"
LOOPBACK = "127.0.0.1"


@dataclasses.dataclass(frozen=True)
class LaunchResult:
    """How a launch ended.

    Attributes:
        exit_code: 0, or the first non-zero exit code of a worker (128 + N
            for a worker killed by signal N).
        attempts: Number of times the group was started.
        failed_worker: Index of the worker whose failure ended the last
            attempt, or None.
        message: A one-line account, naming the failed worker.
        addresses: The worker addresses of the last attempt.
    """

    exit_code: int
    attempts: int
    failed_worker: int | None
    message: str
    addresses: tuple[str, ...]


def pick_loopback_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(addresses: Sequence[str], index: int) -> str:
    """The `TF_CONFIG` of worker `index` in a cluster of `addresses`."""
    return json.dumps(
        {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": index}}
    )


def _describe_exit(index: int, pid: int, code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"worker {index} (pid {pid}) was killed by {name}"
    return f"worker {index} (pid {pid}) exited with code {code}"


def _exit_code(code: int) -> int:
    return 128 - code if code < 0 else code


class _Worker:
    """One worker process and the thread copying its output."""

    def __init__(self, index, command, env, output, output_lock):
        self.index = index
        self.process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Own process group: stop its children too.
        )
        self._reader = threading.Thread(
            target=self._copy_output, args=(output, output_lock), daemon=True
        )
        self._reader.start()

    def _copy_output(self, output, output_lock):
        prefix = f"[worker {self.index}] ".encode()
        for line in iter(self.process.stdout.readline, b""):
            text = (prefix + line).decode(errors="replace")
            if not text.endswith("\n"):
                text += "\n"
            with output_lock:
                output.write(text)
                output.flush()
        self.process.stdout.close()

    def signal_group(self, signum):
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def join_output(self, timeout=5.0):
        self._reader.join(timeout)


def _stop(workers: list[_Worker], grace_seconds: float) -> None:
    for worker in workers:
        if worker.process.poll() is None:
            worker.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for worker in workers:
        try:
            worker.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for worker in workers:
        # Kill what is left of each group, including processes the worker
        # started, so no process outlives the launch.
        worker.signal_group(signal.SIGKILL)
        if worker.process.poll() is None:
            worker.process.wait()
    for worker in workers:
        worker.join_output()


def launch(
    script_args: Sequence[str],
    *,
    workers: int | None = None,
    hosts: Sequence[str] | None = None,
    index: int | None = None,
    max_restarts: int = 0,
    devices_per_worker: int | None = None,
    collective_timeout: float | None = None,
    output: TextIO | None = None,
    grace_seconds: float = 5.0,
    python: str = sys.executable,
) -> LaunchResult:
    """Runs `script_args` (a script and its arguments) as a worker group.

    Args:
        script_args: The training script followed by its arguments.
        workers: Number of workers on this machine (loopback). Defaults to
            None; give exactly one of `workers` and `hosts`.
        hosts: `"host:port"` of every worker of a real cluster; this machine
            runs worker `index`. Defaults to None.
        index: This machine's index in `hosts`. Defaults to None.
        max_restarts: Times the whole group is restarted after a failure.
            Defaults to 0.
        devices_per_worker: Simulated CPU devices per worker (rehearsal on a
            machine without GPUs). Defaults to None (real local devices).
        collective_timeout: Seconds a collective waits for its peers.
            Defaults to None (60).
        output: Stream receiving the workers' prefixed output. Defaults to
            None (`sys.stdout`).
        grace_seconds: Time workers get to exit after SIGTERM before SIGKILL.
            Defaults to 5.
        python: Interpreter running the workers. Defaults to this one.

    Returns:
        A `LaunchResult`.

    Raises:
        ValueError: If the arguments do not describe a valid group.

    Example:

    >>> from parallel_keras.multi_worker import launch
    >>> result = launch.launch(["train.py", "--epochs", "2"], workers=2)  # doctest: +SKIP
    >>> result.exit_code  # doctest: +SKIP
    0
    """
    addresses_fn, indices = _plan(workers, hosts, index)
    if not script_args:
        raise ValueError(
            "launch needs a script to run. Received: no script. Pass e.g. "
            "`parallel-keras launch --workers 2 train.py`."
        )
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ValueError(
            "max_restarts must be an integer >= 0. Received: "
            f"max_restarts={max_restarts!r}."
        )
    output = output or sys.stdout
    base_env = dict(os.environ)
    base_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    base_env["PYTHONUNBUFFERED"] = "1"
    if devices_per_worker is not None:
        base_env[cluster.DEVICES_PER_WORKER_ENV] = str(int(devices_per_worker))
    if collective_timeout is not None:
        base_env[cluster.COLLECTIVE_TIMEOUT_ENV] = str(float(collective_timeout))
    command = [python, "-u", "-m", "parallel_keras.multi_worker.bootstrap", *script_args]
    temp_root = tempfile.mkdtemp(prefix="parallel_keras_launch_")
    base_env[writes.WORKER_TEMP_ROOT_ENV] = temp_root
    try:
        return _run_attempts(
            command, base_env, addresses_fn, indices, max_restarts, output,
            grace_seconds,
        )
    finally:
        shutil.rmtree(temp_root, ignore_errors=True)


def _run_attempts(
    command, base_env, addresses_fn, indices, max_restarts, output, grace_seconds
) -> LaunchResult:
    output_lock = threading.Lock()
    attempt = 0
    while True:
        addresses = addresses_fn()
        group: list[_Worker] = []
        logging.info(
            "parallel-keras launch: attempt %d, workers %s at %s",
            attempt + 1,
            list(indices),
            ",".join(addresses),
        )
        try:
            for worker_index in indices:
                env = dict(base_env)
                env["TF_CONFIG"] = tf_config(addresses, worker_index)
                env[RESTART_ENV] = str(attempt)
                group.append(_Worker(worker_index, command, env, output, output_lock))
            failure = _watch(group)
        finally:
            # Also on KeyboardInterrupt / SIGTERM of the launcher itself.
            _stop(group, grace_seconds)
        attempt += 1
        if failure is None:
            return LaunchResult(0, attempt, None, "all workers finished", tuple(addresses))
        worker, code = failure
        message = _describe_exit(worker.index, worker.process.pid, code)
        if attempt <= max_restarts:
            logging.warning(
                "parallel-keras launch: %s; stopped the other workers; "
                "restarting the group (restart %d of %d).",
                message,
                attempt,
                max_restarts,
            )
            continue
        return LaunchResult(
            _exit_code(code),
            attempt,
            worker.index,
            f"{message}; stopped the other workers"
            + (f" after {max_restarts} restart(s)" if max_restarts else "")
            + ".",
            tuple(addresses),
        )


def _plan(workers, hosts, index):
    """Returns (a function giving this attempt's addresses, local indices)."""
    if (workers is None) == (hosts is None):
        raise ValueError(
            "launch needs either workers=N (all on this machine) or hosts with "
            f"an index (one machine of a cluster). Received: workers={workers!r}, "
            f"hosts={hosts!r}."
        )
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(
                f"workers must be an integer >= 1. Received: workers={workers!r}."
            )
        if index is not None:
            raise ValueError(
                "index is only meaningful with hosts. Received: "
                f"workers={workers}, index={index}. Drop --index."
            )
        return (
            lambda: [f"{LOOPBACK}:{port}" for port in pick_loopback_ports(workers)],
            list(range(workers)),
        )
    hosts = list(hosts)
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit():
            raise ValueError(
                "Each host must be written host:port. Received: "
                f"hosts={hosts}. Use e.g. --hosts 10.0.0.1:2222,10.0.0.2:2222."
            )
    if index is None or not 0 <= index < len(hosts):
        raise ValueError(
            "With hosts, index must say which of them this machine is. "
            f"Received: index={index!r} for {len(hosts)} hosts. Pass "
            f"--index between 0 and {len(hosts) - 1}."
        )
    return (lambda: hosts), [index]


def _watch(group: list[_Worker]):
    """Waits for the group; returns (worker, code) of the first failure."""
    while True:
        codes = [(worker, worker.process.poll()) for worker in group]
        failed = [(worker, code) for worker, code in codes if code not in (None, 0)]
        if failed:
            # Peers of a dead worker exit with LOST_PEER_EXIT_CODE; when both
            # show up in one poll, the dead worker is the cause to report.
            failed.sort(key=lambda item: item[1] == bootstrap.LOST_PEER_EXIT_CODE)
            return failed[0]
        if all(code == 0 for _, code in codes):
            return None
        time.sleep(0.1)
