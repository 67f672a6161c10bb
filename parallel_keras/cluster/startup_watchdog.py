# SPDX-License-Identifier: Apache-2.0
"""Bounds a worker's start-up: run as a file by `strategy.initialize`.

`python startup_watchdog.py PID TIMEOUT INDEX ADDRESS...` waits until its
stdin closes (the worker's strategy exists, or the worker is gone) or
TIMEOUT seconds pass. On timeout it names the peers whose port does not
answer, then stops the worker (SIGTERM, then SIGKILL). It runs as a separate process
because the worker waits for its peers inside TensorFlow, where no Python
thread of the worker gets to run. It imports nothing of parallel_keras.
"""

import os
import select
import signal
import socket
import sys


def main(argv):
    pid, timeout, index, addresses = int(argv[1]), float(argv[2]), int(argv[3]), argv[4:]
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if ready:
        return 0  # Stdin closed: started, or the worker ended anyway.
    missing, foreign = [], []
    for peer, address in enumerate(addresses):
        if peer == index:
            continue
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=2) as connection:
                if not _speaks_grpc(connection):
                    foreign.append(f"worker {peer} ({address})")
        except OSError:
            missing.append(f"worker {peer} ({address})")
    if foreign and not missing:
        sys.stderr.write(
            "parallel_keras: every worker must start within the start-up "
            f"timeout of {timeout:.0f} s. Received: worker {index} waited, and "
            f"the port of {', '.join(foreign)} is held by a program that is not "
            "a TensorFlow worker (it accepts connections but does not answer "
            "as one). Stop that program or pick another port for that worker "
            "(--hosts), then start the group again.\n"
        )
    else:
        _write_never_arrived(timeout, index, missing)
    sys.stderr.flush()
    # TensorFlow may handle SIGTERM itself (preemption); SIGKILL follows.
    for signum, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return 0
        if select.select([sys.stdin], [], [], grace)[0]:
            return 0
    return 0


# HTTP/2's client preface and an empty SETTINGS frame: a TensorFlow worker
# (a gRPC server) answers with a SETTINGS frame of its own.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _speaks_grpc(connection):
    try:
        connection.settimeout(2)
        connection.sendall(_HTTP2_PREFACE)
        frame = connection.recv(9)
    except OSError:
        return False
    return len(frame) >= 4 and frame[3] == 0x04


def _write_never_arrived(timeout, index, missing):
    sys.stderr.write(
        "parallel_keras: every worker must start within the start-up timeout "
        f"of {timeout:.0f} s. Received: worker {index} waited, and "
        f"{', '.join(missing) or 'some worker (every port answers, but the group did not form)'}"
        " never arrived. Check that worker's own output (it may have failed "
        "to start), then start the group again; raise --startup-timeout if "
        "workers start slowly.\n"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
