# SPDX-License-Identifier: Apache-2.0
"""Stops a worker's process group when its launcher dies: run as a file.

`python launcher_guard.py WORKER_PID LAUNCHER_PID INDEX` blocks on its stdin,
the read end of a pipe whose only write end the launcher holds. The kernel
closes that end however the launcher ends, SIGKILL included, so end of file
means the launcher is gone. When the worker is still alive then, nothing
watches it any more: the guard kills the worker's process group (the
worker and every process it started, which share its group) and says so.
A launcher that ends normally reaps its workers first, then closes the
pipe, and the guard exits quietly.

A separate process, not a thread of the worker: a worker blocked inside
TensorFlow (forming the group, a collective) runs no Python thread, and
its own session keeps it out of reach of the launcher's terminal signals.
It imports nothing of parallel_keras, so it starts in milliseconds.
"""

import os
import signal
import sys
import time


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def main(argv):
    worker, launcher, index = int(argv[1]), int(argv[2]), argv[3]
    # The launcher's Ctrl-C must not end the guard before it can act.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            if not os.read(sys.stdin.fileno(), 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    if not _alive(worker):
        return 0  # The launcher reaped its worker.
    # A killed launcher's pipe closes while it exits, a moment before this
    # process is handed to another parent: wait for that before deciding
    # the launcher closed the pipe itself (under load the moment is longer).
    deadline = time.monotonic() + 5
    while _alive(launcher) and os.getppid() == launcher and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(launcher) and os.getppid() == launcher:
        return 0  # The launcher closed the pipe itself.
    try:
        os.killpg(worker, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return 0
    sys.stderr.write(
        f"parallel_keras: worker {index} (pid {worker}) must not outlive its "
        f"launcher, and the launcher (pid {launcher}) ended without stopping "
        f"it (killed, e.g. by SIGKILL or the OOM killer). Received: launcher "
        f"pid {launcher} gone. Stopped worker {index} and every process it "
        "started; run `parallel-keras launch` again (with BackupAndRestore "
        "the run resumes from its last backup).\n"
    )
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
