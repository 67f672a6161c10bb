# SPDX-License-Identifier: Apache-2.0
"""One group of worker processes: started, watched, stopped, restarted.

Each worker's output is copied line by line with a `[worker I]` prefix (and
to `worker-I.log` with a log folder). When a worker fails the others are
stopped at once (SIGTERM, then SIGKILL after a grace period, to each
worker's whole process group) and the group is either restarted, up to
`max_restarts` times, shrunk to the survivors (`min_workers`), or the launch
ends with the first non-zero exit code.

Workers run in their own sessions (so that the launcher can stop each
one's whole process group), which also means nothing stops them when the
launcher itself is killed. So each worker has a guard process
(`launcher_guard.py`) holding the read end of a pipe only the launcher
writes: when the launcher dies, however it dies, the guard sees end of file
and kills the worker's process group.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time

from absl import logging

from parallel_keras.multi_worker import bootstrap, group_plan, worker_env

_GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher_guard.py")


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
        # What the worker's start-up watchdog said before stopping it.
        self.startup_failure: str | None = None
        self.process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Own process group: stop its children too.
        )
        self._guard, self._guard_pipe = _start_guard(self.process.pid, index)
        self._reader = threading.Thread(
            target=self._copy_output, args=(output, output_lock), daemon=True
        )
        self._reader.start()

    def _copy_output(self, output, output_lock):
        prefix = f"[worker {self.index}] ".encode()
        stdout = self.process.stdout
        if stdout is None:  # Popen was given stdout=PIPE.
            raise RuntimeError(f"worker {self.index}: its output pipe was not opened.")
        for line in iter(stdout.readline, b""):
            if line.startswith(_STARTUP_WATCHDOG_LINE):
                self.startup_failure = line[len(b"parallel_keras: ") :].decode(errors="replace")
            text = (prefix + line).decode(errors="replace")
            if not text.endswith("\n"):
                text += "\n"
            with output_lock:
                output.write(_encodable(text, output))
                output.flush()
            if self._log_file is not None:
                self._log_file.write(line.decode(errors="replace"))
                self._log_file.flush()
        stdout.close()

    def poll(self):
        code = self.process.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def summary(self) -> WorkerSummary:
        code = self.poll()
        ended = self.ended if self.ended is not None else time.monotonic()
        return WorkerSummary(self.index, code, self.stopped_by_launcher, ended - self.started)

    def signal_group(self, signum):
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def join_output(self, timeout=5.0):
        self._reader.join(timeout)

    def release_guard(self):
        """Ends the guard once the worker is reaped (it then exits quietly)."""
        if self._guard_pipe is not None:
            os.close(self._guard_pipe)
            self._guard_pipe = None
            try:
                self._guard.wait(5)
            except subprocess.TimeoutExpired:
                self._guard.kill()
                self._guard.wait()


def _start_guard(worker_pid: int, index: int):
    """Starts the process that kills the worker's group if the launcher dies."""
    read_end, write_end = os.pipe()  # Not inherited: only the guard reads.
    try:
        guard = subprocess.Popen(
            [sys.executable, "-I", "-S", _GUARD, str(worker_pid), str(os.getpid()), str(index)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            # Its own session: a signal to the launcher's process group
            # (a terminal's Ctrl-C, `kill -9 -PGID`) does not reach it.
            start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return guard, write_end


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
        worker.release_guard()


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
                # The pipe is read as UTF-8, whatever the locale says.
                env.setdefault("PYTHONIOENCODING", "utf-8")
                if base_env.get(worker_env.CLUSTER_ENV) != "slurm":
                    env["TF_CONFIG"] = group_plan.tf_config(addresses, worker_index)
                env[worker_env.RESTART_ENV] = str(attempt)
                log_file = None
                if log_dir is not None:
                    log_file = open(
                        os.path.join(log_dir, f"worker-{worker_index}.log"),
                        "a" if attempt else "w",
                        encoding="utf-8",
                    )
                    log_file.write(f"--- attempt {attempt + 1} ---\n")
                    logs.append(log_file)
                group.append(_Worker(worker_index, command, env, output, output_lock, log_file))
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
        worker, code, dead, explained = failure
        message = explained or _describe_exit(worker.index, worker.process.pid, code)
        if explained is None and worker.startup_failure is not None:
            # Its watchdog stopped it (SIGTERM, then SIGKILL): the cause is
            # the peer it waited for, not the signal.
            message = (
                f"worker {worker.index} (pid {worker.process.pid}) did not join "
                f"the group and was stopped: {worker.startup_failure.strip()}"
            )
        if attempt <= max_restarts and size is not None:
            survivors = size - dead
            if survivors < plan.min_workers:
                return LaunchResult(
                    _exit_code(code),
                    attempt,
                    worker.index,
                    f"{message}; {survivors} worker(s) left, fewer than "
                    f"--min-workers {plan.min_workers}; stopped the others.",
                    tuple(addresses),
                    summaries,
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


# The first bytes of `cluster/startup_watchdog.py`'s message.
_STARTUP_WATCHDOG_LINE = b"parallel_keras: every worker must start within"


def _process_state(pid: int) -> str | None:
    """The kernel's one-letter state of `pid` (T: stopped), where /proc exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            # "pid (command) state ...": the command may hold spaces and ')'.
            return file.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


def _stopped_peer(group: list[_Worker], failed: _Worker) -> _Worker | None:
    """A worker other than `failed` that is stopped (SIGSTOP, a debugger)."""
    for peer in group:
        if (
            peer is not failed
            and peer.poll() is None
            and _process_state(peer.process.pid) in ("T", "t")
        ):
            return peer
    return None


def _stopped_message(peer: _Worker, failed: _Worker, code: int) -> str:
    return (
        f"worker {peer.index} (pid {peer.process.pid}) was stopped (SIGSTOP, "
        "Ctrl-Z or a debugger; process state T) and stopped answering, and "
        f"worker {failed.index} then failed ("
        + _describe_exit(failed.index, failed.process.pid, code).split(") ", 1)[1]
        + "). Every worker must keep running until the end: resume a stopped "
        f"worker with `kill -CONT {peer.process.pid}`, or find why worker "
        f"{failed.index} failed in its own output"
    )


def _explain_lost_peer(group: list[_Worker], lost: _Worker):
    """Which peer a worker that lost contact was waiting for, and why.

    Returns:
        (the worker to blame, a message), or (lost, None) when no peer's
        state explains it.
    """
    peer = _stopped_peer(group, lost)
    if peer is not None:
        return peer, (
            f"worker {peer.index} (pid {peer.process.pid}) was stopped "
            "(SIGSTOP, Ctrl-Z or a debugger; process state T) and stopped "
            f"answering, so worker {lost.index} gave up on it after the "
            "collective timeout. Every worker must keep running until the "
            f"end: resume a stopped worker with `kill -CONT "
            f"{peer.process.pid}` before the timeout, or raise "
            "--collective-timeout"
        )
    finished = [peer for peer in group if peer is not lost and peer.poll() == 0]
    if finished:
        names = ", ".join(f"worker {peer.index}" for peer in finished)
        return lost, (
            f"worker {lost.index} (pid {lost.process.pid}) lost contact with "
            f"its peers after {names} had already finished (exit 0): every "
            "step is a collective of all workers, so every worker must run "
            "the same number of steps. Give every worker the same epochs, "
            "steps_per_epoch and number of batches (the same data, or "
            "steps_per_epoch set explicitly)"
        )
    return lost, None


def _watch(group: list[_Worker]):
    """Waits for the group; returns (worker, code, dead count, explanation).

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
            worker, code = failed[0]
            stopped = _stopped_peer(group, worker)
            if stopped is not None and code != bootstrap.LOST_PEER_EXIT_CODE:
                # A peer that stops answering makes the others fail in many
                # ways (a timed-out collective, a user's own timeout).
                return stopped, code, max(dead, 1), _stopped_message(stopped, worker, code)
            if code == bootstrap.LOST_PEER_EXIT_CODE:
                # Read before the group is stopped: the peer's state is the cause.
                blamed, explained = _explain_lost_peer(group, worker)
                return blamed, code, max(dead, 1), explained
            return worker, code, max(dead, 1), None
        if all(code == 0 for _, code in codes):
            return None
        time.sleep(0.1)


def _encodable(text: str, stream) -> str:
    """`text`, with what `stream`'s encoding cannot hold escaped (`\\uXXXX`)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text
