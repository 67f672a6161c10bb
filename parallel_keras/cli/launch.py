"""`parallel-keras launch`: run a training script as several workers.

    parallel-keras launch --workers 2 train.py --epochs 3
    parallel-keras launch --hosts 10.0.0.1:2222,10.0.0.2:2222 --index 0 train.py

Everything after the script is passed to it. Each worker's output is
prefixed with `[worker I]`; the exit code is the first non-zero exit code of
a worker (0 when all succeed).
"""

from __future__ import annotations

import argparse
import signal
import sys


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "launch",
        help="Run a training script as N workers of a multi-worker cluster.",
        description=(
            "Starts a training script as worker processes with TF_CONFIG set "
            "for each, for MultiWorkerMirroredStrategy. With --workers the "
            "cluster lives on this machine (127.0.0.1 only); with --hosts and "
            "--index this machine runs one worker of a real cluster."
        ),
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--workers", type=int, help="Number of workers on this machine (loopback)."
    )
    where.add_argument(
        "--hosts",
        type=lambda text: [host.strip() for host in text.split(",") if host.strip()],
        help="Comma-separated host:port of every worker, e.g. h1:2222,h2:2222.",
    )
    parser.add_argument(
        "--index", type=int, default=None, help="This machine's position in --hosts."
    )
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="Restart the whole group up to K times after a worker fails.",
    )
    parser.add_argument(
        "--devices-per-worker",
        type=int,
        default=None,
        help="Simulated CPU devices per worker, to rehearse multi-GPU workers.",
    )
    parser.add_argument(
        "--collective-timeout",
        type=float,
        default=None,
        help="Seconds a collective waits for its peers before failing (60).",
    )
    parser.add_argument("script", help="The training script.")
    parser.add_argument(
        "script_args", nargs=argparse.REMAINDER, help="Arguments for the script."
    )
    parser.set_defaults(run=run)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    from parallel_keras.multi_worker import launch  # pylint: disable=g-import-not-at-top

    # A SIGTERM to the launcher stops the workers as Ctrl-C does.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        result = launch.launch(
            [args.script, *args.script_args],
            workers=args.workers,
            hosts=args.hosts,
            index=args.index,
            max_restarts=args.max_restarts,
            devices_per_worker=args.devices_per_worker,
            collective_timeout=args.collective_timeout,
            output=sys.stdout,
        )
    except ValueError as error:
        print(f"parallel-keras launch: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("parallel-keras launch: interrupted; workers stopped.", file=sys.stderr)
        return 130
    stream = sys.stdout if result.exit_code == 0 else sys.stderr
    print(
        f"parallel-keras launch: {result.message} "
        f"(attempts: {result.attempts}, workers: {','.join(result.addresses)}).",
        file=stream,
    )
    return result.exit_code
