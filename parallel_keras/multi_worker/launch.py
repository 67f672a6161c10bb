"""The launcher: a training script as a group of worker processes.

`launch` starts one process per worker, each with its `TF_CONFIG`, through
`bootstrap` (which creates the multi-worker strategy before the script
runs). It prefixes each line a worker prints with `[worker I]`, and watches
the group: when a worker fails it stops the others at once (SIGTERM, then
SIGKILL after a grace period) and either restarts the whole group, up to
`max_restarts` times, or returns the first non-zero exit code.

With `min_workers`, a group that lost workers restarts with the survivors
instead (see `BackupAndRestore` for resuming). With `log_dir`, each worker's
output also goes to `worker-I.log`. Before anything starts, the script, the
settings and (with `hosts`) this machine's port are checked.

Three modes, like `torchrun --nnodes/--node_rank`:

* `workers=N`: the whole cluster on this machine. Ports are picked on
  127.0.0.1 and every worker address is 127.0.0.1. (TensorFlow's own gRPC
  server still listens on all interfaces at that port, checked on TF 2.21;
  TF offers no listen-address setting, so firewall the ports if needed.)
* `hosts=["h1:port", "h2:port"], index=I`: this machine's worker of a real
  cluster; each machine runs its own launch with its own index.
* `slurm=True`: one task of an `srun` step; the worker reads the cluster
  from Slurm's environment (`SlurmClusterResolver`, in the worker: this
  process never imports TensorFlow).
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
class WorkerSummary:
    """How one worker of the last attempt ended.

    Attributes:
        index: The worker's index in its group.
        exit_code: Its exit code (negative: killed by that signal).
        stopped_by_launcher: Whether the launcher stopped it after a peer
            failed.
        wall_seconds: Time from its start to its exit.
    """

    index: int
    exit_code: int | None
    stopped_by_launcher: bool
    wall_seconds: float

    def describe(self) -> str:
        if self.stopped_by_launcher:
            status = "stopped by the launcher"
        elif self.exit_code is not None and self.exit_code < 0:
            try:
                status = f"killed by {signal.Signals(-self.exit_code).name}"
            except ValueError:
                status = f"killed by signal {-self.exit_code}"
        else:
            status = f"exit {self.exit_code}"
        return f"worker {self.index}: {status}, {self.wall_seconds:.1f} s"


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
        workers: How each worker of the last attempt ended.
    """

    exit_code: int
    attempts: int
    failed_worker: int | None
    message: str
    addresses: tuple[str, ...]
    workers: tuple[WorkerSummary, ...] = ()

    def summary(self) -> str:
        """One line: each worker's exit status and wall time."""
        return "; ".join(worker.describe() for worker in self.workers)


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

    def __init__(self, index, command, env, output, output_lock, log_file=None):
        self.index = index
        self.started = time.monotonic()
        self.ended: float | None = None
        self.stopped_by_launcher = False
        self._log_file = log_file
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
            if self._log_file is not None:
                self._log_file.write(line.decode(errors="replace"))
                self._log_file.flush()
        self.process.stdout.close()

    def poll(self):
        code = self.process.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def summary(self) -> "WorkerSummary":
        code = self.poll()
        ended = self.ended if self.ended is not None else time.monotonic()
        return WorkerSummary(
            self.index, code, self.stopped_by_launcher, ended - self.started
        )

    def signal_group(self, signum):
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def join_output(self, timeout=5.0):
        self._reader.join(timeout)


def _stop(workers: list[_Worker], grace_seconds: float) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.stopped_by_launcher = True
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
        if worker.poll() is None:
            worker.process.wait()
            worker.poll()
    for worker in workers:
        worker.join_output()


def launch(
    script_args: Sequence[str],
    *,
    workers: int | None = None,
    hosts: Sequence[str] | None = None,
    index: int | None = None,
    slurm: bool = False,
    slurm_port_base: int = 8888,
    max_restarts: int = 0,
    min_workers: int | None = None,
    devices_per_worker: int | None = None,
    collective_timeout: float | None = None,
    startup_timeout: float | None = None,
    log_dir: str | os.PathLike | None = None,
    output: TextIO | None = None,
    grace_seconds: float = 5.0,
    python: str = sys.executable,
    bootstrap_module: str = "parallel_keras.multi_worker.bootstrap",
) -> LaunchResult:
    """Runs `script_args` (a script and its arguments) as a worker group.

    Args:
        script_args: The training script followed by its arguments.
        workers: Number of workers on this machine (loopback). Defaults to
            None; give exactly one of `workers`, `hosts` and `slurm`.
        hosts: `"host:port"` of every worker of a real cluster; this machine
            runs worker `index`. Defaults to None.
        index: This machine's index in `hosts`. Defaults to None.
        slurm: This process is one task of a Slurm step (`srun`): run its
            worker, the cluster read from Slurm's environment by
            `SlurmClusterResolver`. Defaults to False.
        slurm_port_base: First port of the workers on each Slurm node.
            Defaults to 8888.
        max_restarts: Times the group is restarted after a failure.
            Defaults to 0.
        min_workers: With `workers`: after a worker dies, restart with the
            survivors as long as at least this many are left (same global
            batch, resumed from the last backup). Defaults to None: restart
            the whole group.
        devices_per_worker: Simulated CPU devices per worker (rehearsal on a
            machine without GPUs). Defaults to None (the script's own
            `simulate_devices(n)`, else real local devices).
        collective_timeout: Seconds a collective waits for its peers.
            Defaults to None (60).
        startup_timeout: Seconds a worker waits for all others to start
            before it exits naming the missing ones. Defaults to None (120).
        log_dir: Folder receiving `worker-I.log`, each worker's output.
            Defaults to None (console only).
        output: Stream receiving the workers' prefixed output. Defaults to
            None (`sys.stdout`).
        grace_seconds: Time workers get to exit after SIGTERM before SIGKILL.
            Defaults to 5.
        python: Interpreter running the workers. Defaults to this one.
        bootstrap_module: Module each worker runs with `script_args`.
            Defaults to the script bootstrap.

    Returns:
        A `LaunchResult`.

    Raises:
        ValueError: If the arguments do not describe a valid group, the
            script is missing, the Slurm environment is incomplete or this
            machine's port is taken. Nothing has started then.

    Example:

    >>> from parallel_keras.multi_worker import launch
    >>> result = launch.launch(["train.py", "--epochs", "2"], workers=2)  # doctest: +SKIP
    >>> result.exit_code  # doctest: +SKIP
    0
    """
    plan = _plan(workers, hosts, index, slurm, min_workers)
    if not script_args:
        raise ValueError(
            "launch needs a script to run. Received: no script. Pass e.g. "
            "`parallel-keras launch --workers 2 train.py`."
        )
    runs_a_script = bootstrap_module == "parallel_keras.multi_worker.bootstrap"
    if runs_a_script and not os.path.isfile(script_args[0]):
        raise ValueError(
            "The training script must exist before any worker starts. "
            f"Received: {script_args[0]!r}, which is not a file (working "
            f"folder {os.getcwd()}). Check the path."
        )
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ValueError(
            "max_restarts must be an integer >= 0. Received: "
            f"max_restarts={max_restarts!r}."
        )
    _check_positive("devices_per_worker", devices_per_worker, integer=True)
    _check_positive("collective_timeout", collective_timeout, integer=False)
    _check_positive("startup_timeout", startup_timeout, integer=False)
    if hosts is not None:
        _check_port_free(plan.addresses(len(plan.indices))[plan.indices[0]])
    output = output or sys.stdout
    base_env = dict(os.environ)
    base_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    base_env["PYTHONUNBUFFERED"] = "1"
    if devices_per_worker is not None:
        base_env[cluster.DEVICES_PER_WORKER_ENV] = str(int(devices_per_worker))
    if collective_timeout is not None:
        base_env[cluster.COLLECTIVE_TIMEOUT_ENV] = str(float(collective_timeout))
    if startup_timeout is not None:
        base_env[cluster.STARTUP_TIMEOUT_ENV] = str(float(startup_timeout))
    if slurm:
        base_env[bootstrap.CLUSTER_ENV] = "slurm"
        base_env[bootstrap.SLURM_PORT_BASE_ENV] = str(int(slurm_port_base))
    command = [python, "-u", "-m", bootstrap_module, *script_args]
    if log_dir is not None:
        log_dir = os.fspath(log_dir)
        os.makedirs(log_dir, exist_ok=True)
    temp_root = tempfile.mkdtemp(prefix="parallel_keras_launch_")
    base_env[writes.WORKER_TEMP_ROOT_ENV] = temp_root
    try:
        return _run_attempts(
            command, base_env, plan, max_restarts, output, grace_seconds, log_dir
        )
    finally:
        shutil.rmtree(temp_root, ignore_errors=True)


def _check_positive(name, value, integer):
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ValueError(
            f"{name} must be a positive {'integer' if integer else 'number'}. "
            f"Received: {name}={value!r}. Pass e.g. {name}="
            f"{2 if integer else 60}."
        )


def _check_port_free(address: str) -> None:
    host, _, port = address.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", int(port)))
        except OSError as error:
            raise ValueError(
                "This machine's worker needs its port free for TensorFlow's "
                f"gRPC server. Received: port {port} of {address} (--hosts "
                f"entry of this --index) is in use ({error.strerror}). Stop "
                "what listens there (`ss -ltnp | grep :"
                f"{port}`) or give this worker another port in --hosts."
            ) from None


@dataclasses.dataclass
class _Plan:
    """Which workers run here and at which addresses."""

    addresses: object  # (group size) -> list of "host:port".
    indices: list[int]
    min_workers: int | None = None


def _run_attempts(
    command, base_env, plan, max_restarts, output, grace_seconds, log_dir
) -> LaunchResult:
    output_lock = threading.Lock()
    attempt = 0
    size = len(plan.indices) if plan.min_workers is not None else None
    indices = list(plan.indices)
    while True:
        addresses = plan.addresses(size)
        group: list[_Worker] = []
        logs = []
        logging.info(
            "parallel-keras launch: attempt %d, workers %s at %s",
            attempt + 1,
            list(indices),
            ",".join(addresses),
        )
        try:
            for worker_index in indices:
                env = dict(base_env)
                if base_env.get(bootstrap.CLUSTER_ENV) != "slurm":
                    env["TF_CONFIG"] = tf_config(addresses, worker_index)
                env[RESTART_ENV] = str(attempt)
                log_file = None
                if log_dir is not None:
                    log_file = open(  # pylint: disable=consider-using-with
                        os.path.join(log_dir, f"worker-{worker_index}.log"),
                        "a" if attempt else "w",
                        encoding="utf-8",
                    )
                    log_file.write(f"--- attempt {attempt + 1} ---\n")
                    logs.append(log_file)
                group.append(
                    _Worker(worker_index, command, env, output, output_lock, log_file)
                )
            failure = _watch(group)
        finally:
            # Also on KeyboardInterrupt / SIGTERM of the launcher itself.
            _stop(group, grace_seconds)
            for log_file in logs:
                log_file.close()
        attempt += 1
        summaries = tuple(worker.summary() for worker in group)
        if failure is None:
            return LaunchResult(
                0, attempt, None, "all workers finished", tuple(addresses), summaries
            )
        worker, code, dead = failure
        message = _describe_exit(worker.index, worker.process.pid, code)
        if attempt <= max_restarts and size is not None:
            survivors = size - dead
            if survivors < plan.min_workers:
                return LaunchResult(
                    _exit_code(code), attempt, worker.index,
                    f"{message}; {survivors} worker(s) left, fewer than "
                    f"--min-workers {plan.min_workers}; stopped the others.",
                    tuple(addresses), summaries,
                )
            size = survivors
            indices = list(range(size))
        if attempt <= max_restarts:
            logging.warning(
                "parallel-keras launch: %s; stopped the other workers; "
                "restarting the group with %d worker(s) (restart %d of %d).",
                message,
                len(indices),
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
            summaries,
        )


def _plan(workers, hosts, index, slurm, min_workers) -> _Plan:
    given = [name for name, value in (("workers", workers), ("hosts", hosts)) if value is not None]
    if slurm:
        given.append("slurm")
    if len(given) != 1:
        raise ValueError(
            "launch needs either workers=N (all on this machine), hosts with "
            "an index (one machine of a cluster) or slurm=True (one task of "
            f"srun). Received: workers={workers!r}, hosts={hosts!r}, "
            f"slurm={slurm!r}."
        )
    if min_workers is not None:
        if workers is None:
            raise ValueError(
                "--min-workers applies to a group on this machine. Received: "
                f"min_workers={min_workers!r} with {given[0]}. Use "
                "--workers N --min-workers M, or drop --min-workers."
            )
        if isinstance(min_workers, bool) or not isinstance(min_workers, int) or not (
            1 <= min_workers <= (workers if isinstance(workers, int) else 0)
        ):
            raise ValueError(
                "--min-workers must be between 1 and --workers (the group "
                "shrinks to no fewer than that many survivors). Received: "
                f"--min-workers {min_workers!r} with --workers {workers!r}. "
                f"Pass --min-workers at most {workers!r}."
            )
    if slurm:
        if index is not None:
            raise ValueError(
                "With --slurm, Slurm says which task this is (SLURM_PROCID). "
                f"Received: index={index}. Drop --index."
            )
        cluster.check_slurm_environment(os.environ)
        return _Plan(lambda size: [], [int(os.environ["SLURM_PROCID"])])
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
        return _Plan(
            lambda size: [
                f"{LOOPBACK}:{port}" for port in pick_loopback_ports(size or workers)
            ],
            list(range(workers)),
            min_workers,
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
    return _Plan(lambda size: hosts, [index])


def _watch(group: list[_Worker]):
    """Waits for the group; returns (worker, code, dead count) of a failure.

    The dead count is the number of workers that failed by themselves (not
    peers that only lost contact with them).
    """
    while True:
        codes = [(worker, worker.poll()) for worker in group]
        failed = [(worker, code) for worker, code in codes if code not in (None, 0)]
        if failed:
            # Peers of a dead worker exit with LOST_PEER_EXIT_CODE; when both
            # show up in one poll, the dead worker is the cause to report.
            failed.sort(key=lambda item: item[1] == bootstrap.LOST_PEER_EXIT_CODE)
            dead = sum(code != bootstrap.LOST_PEER_EXIT_CODE for _, code in failed)
            return failed[0][0], failed[0][1], max(dead, 1)
        if all(code == 0 for _, code in codes):
            return None
        time.sleep(0.1)
