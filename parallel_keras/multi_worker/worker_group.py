"""One group of worker processes: started, watched, stopped, restarted.

Each worker's output is copied line by line with a `[worker I]` prefix (and
to `worker-I.log` with a log folder). When a worker fails the others are
stopped at once (SIGTERM, then SIGKILL after a grace period, to each
worker's whole process group) and the group is either restarted, up to
`max_restarts` times, shrunk to the survivors (`min_workers`), or the launch
ends with the first non-zero exit code.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time

from absl import logging

from parallel_keras.multi_worker import bootstrap
from parallel_keras.multi_worker import group_plan
from parallel_keras.multi_worker import worker_env


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


def run_attempts(
    command, base_env, plan, max_restarts, output, grace_seconds, log_dir
) -> LaunchResult:
    """Runs `command` as the workers of `plan` until done or out of restarts."""
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
                if base_env.get(worker_env.CLUSTER_ENV) != "slurm":
                    env["TF_CONFIG"] = group_plan.tf_config(addresses, worker_index)
                env[worker_env.RESTART_ENV] = str(attempt)
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
