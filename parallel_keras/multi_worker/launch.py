# SPDX-License-Identifier: Apache-2.0
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

Which workers run here (`workers`, `hosts` or `slurm`) is `group_plan`;
starting and watching the processes is `worker_group`; what each worker
runs is `bootstrap`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import TextIO

from absl import logging

from parallel_keras.multi_worker import group_plan, worker_env, worker_group

LaunchResult = worker_group.LaunchResult
WorkerSummary = worker_group.WorkerSummary
pick_loopback_ports = group_plan.pick_loopback_ports
tf_config = group_plan.tf_config
RESTART_ENV = worker_env.RESTART_ENV


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
    plan = group_plan.plan_group(workers, hosts, index, slurm, min_workers, os.environ)
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
    if runs_a_script:
        _check_readable(script_args[0])
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ValueError(
            "max_restarts must be an integer >= 0. Received: "
            f"max_restarts={max_restarts!r}. Pass e.g. max_restarts=3 "
            "(--max-restarts 3 on the command line), or 0 to stop at the first "
            "failure."
        )
    _check_positive("devices_per_worker", devices_per_worker, integer=True)
    _check_positive("collective_timeout", collective_timeout, integer=False)
    _check_positive("startup_timeout", startup_timeout, integer=False)
    if hosts is not None:
        _check_distinct(hosts)
        addresses = plan.addresses(len(plan.indices))
        group_plan.check_port_free(addresses[plan.indices[0]])
    if log_dir is not None:
        _check_log_dir(os.fspath(log_dir))
    if workers is not None:
        _warn_about_group_size(workers, devices_per_worker)
    output = output or sys.stdout
    base_env = dict(os.environ)
    # Fatal only, as the commands: at 2, a worker without a GPU still logs
    # "failed call to cuInit" at ERROR although nothing is wrong. A level the
    # user set is kept (`-v` sets 0).
    base_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    base_env["PYTHONUNBUFFERED"] = "1"
    command = [python, "-u", "-m", bootstrap_module, *script_args]
    if log_dir is not None:
        log_dir = os.fspath(log_dir)
    temp_root = tempfile.mkdtemp(prefix="parallel_keras_launch_")
    base_env.update(
        worker_env.worker_environ(
            devices_per_worker=devices_per_worker,
            collective_timeout=collective_timeout,
            startup_timeout=startup_timeout,
            worker_temp_root=temp_root,
            slurm_port_base=slurm_port_base if slurm else None,
        )
    )
    try:
        return worker_group.run_attempts(
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


def _check_readable(script: str) -> None:
    # Before any worker starts: a worker would import TensorFlow, then fail.
    try:
        with open(script, "rb") as file:
            file.read(1)
    except OSError as error:
        raise ValueError(
            "The training script must be readable before any worker starts. "
            f"Received: {script!r}, which cannot be read ({error.strerror}). "
            f"Make it readable (chmod u+r {script}) or run the launcher as "
            "the user who owns it."
        ) from None


def _check_distinct(hosts: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for position, host in enumerate(hosts):
        if host in seen:
            raise ValueError(
                "Each worker needs its own host:port in --hosts; two workers "
                "cannot serve on one address, and the group would wait for "
                f"a worker that can never start. Received: {host!r} at "
                f"positions {seen[host]} and {position} of --hosts "
                f"{','.join(hosts)}. Give each worker a distinct port (e.g. "
                f"{host.rpartition(':')[0]}:{_next_port(host)}) or host."
            )
        seen[host] = position


def _next_port(host: str) -> str:
    port = host.rpartition(":")[2]
    return str(int(port) + 1) if port.isdigit() else "2223"


def _check_log_dir(log_dir: str) -> None:
    blocker = log_dir if os.path.exists(log_dir) else None
    if blocker is None:
        current = os.path.abspath(log_dir)
        while not os.path.exists(current) and os.path.dirname(current) != current:
            current = os.path.dirname(current)
        blocker = current
    if not os.path.isdir(blocker):
        raise ValueError(
            "--log-dir names a folder that receives worker-I.log files. "
            f"Received: --log-dir {log_dir}, but {blocker!r} is a regular "
            "file, not a folder. Pass a folder path (it is created if "
            "missing), or move that file away."
        )
    try:
        os.makedirs(log_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=log_dir):
            pass
    except OSError as error:
        raise ValueError(
            "--log-dir must be a folder this process can write. Received: "
            f"--log-dir {log_dir} ({error.strerror}). Pass a writable folder, "
            "or fix its permissions."
        ) from None


# Each worker is a full TensorFlow process: about this much memory at rest.
_WORKER_MEMORY_BYTES = 600 * 2**20


def _warn_about_group_size(workers: int, devices_per_worker: int | None) -> None:
    """Warns when a local group asks for far more than this machine has."""
    cores = os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = None
    too_many_for_cores = workers > 2 * cores
    too_much_memory = memory is not None and workers * _WORKER_MEMORY_BYTES > memory // 2
    if not (too_many_for_cores or too_much_memory):
        return
    logging.warning(
        "parallel-keras launch: --workers %d starts %d TensorFlow processes on "
        "this machine, which has %d CPU cores%s; each takes about %d MiB and "
        "a share of the cores, so the group may run slower than one worker "
        "or exhaust memory. Received: --workers %d%s. Use at most %d workers "
        "here (--devices-per-worker N rehearses more devices in each), or "
        "spread the group over machines with --hosts.",
        workers,
        workers,
        cores,
        f" and {memory / 2**30:.1f} GiB of memory" if memory else "",
        _WORKER_MEMORY_BYTES // 2**20,
        workers,
        f" --devices-per-worker {devices_per_worker}" if devices_per_worker else "",
        max(1, cores),
    )
