# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras launch`: run a training script as several workers.

    parallel-keras launch --workers 2 train.py --epochs 3
    parallel-keras launch --workers 3 --min-workers 2 --max-restarts 1 train.py
    parallel-keras launch --hosts 10.0.0.1:2222,10.0.0.2:2222 --index 0 train.py
    srun parallel-keras launch --slurm train.py        # in an sbatch script

Everything after the script is passed to it. Each worker's output is
prefixed with `[worker I]`; the exit code is the first non-zero exit code of
a worker (0 when all succeed), 2 for a usage error (nothing started) and 130
when interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys

from parallel_keras.cli import errors


def _positive(kind, flag, example):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(
                f"{flag} must be a positive {'integer' if kind is int else 'number'}. "
                f"Received: {flag} {text}. Pass e.g. {flag} {example}."
            )
        return value

    return parse


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
    where.add_argument("--workers", type=int, help="Number of workers on this machine (loopback).")
    where.add_argument(
        "--hosts",
        type=lambda text: [host.strip() for host in text.split(",") if host.strip()],
        help="Comma-separated host:port of every worker, e.g. h1:2222,h2:2222.",
    )
    where.add_argument(
        "--slurm",
        action="store_true",
        default=False,
        help="Run under srun: the cluster comes from Slurm's environment.",
    )
    parser.add_argument(
        "--index", type=int, default=None, help="This machine's position in --hosts."
    )
    parser.add_argument(
        "--min-workers",
        type=int,
        default=None,
        help="With --workers: after a worker dies, restart with the survivors "
        "while at least this many are left.",
    )
    parser.add_argument(
        "--log-dir",
        default=None,
        help="Also write each worker's output to DIR/worker-I.log.",
    )
    parser.add_argument(
        "--slurm-port-base",
        type=_positive(int, "--slurm-port-base", 8888),
        default=8888,
        help="With --slurm: first worker port on each node (8888).",
    )
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="Restart the whole group up to K times after a worker fails.",
    )
    parser.add_argument(
        "--devices-per-worker",
        type=_positive(int, "--devices-per-worker", 2),
        default=None,
        help="Simulated CPU devices per worker, to rehearse multi-GPU workers.",
    )
    parser.add_argument(
        "--collective-timeout",
        type=_positive(float, "--collective-timeout", 60),
        default=None,
        help="Seconds a collective waits for its peers before failing (60).",
    )
    parser.add_argument(
        "--startup-timeout",
        type=_positive(float, "--startup-timeout", 120),
        default=None,
        help="Seconds a worker waits for all others to start (120).",
    )
    parser.add_argument("script", help="The training script.")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="Arguments for the script.")
    parser.set_defaults(run=run)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    from parallel_keras.multi_worker import launch

    # A SIGTERM to the launcher stops the workers as Ctrl-C does.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        result = launch.launch(
            [args.script, *args.script_args],
            workers=args.workers,
            hosts=args.hosts,
            index=args.index,
            slurm=args.slurm,
            slurm_port_base=args.slurm_port_base,
            max_restarts=args.max_restarts,
            min_workers=args.min_workers,
            log_dir=args.log_dir,
            devices_per_worker=args.devices_per_worker,
            collective_timeout=args.collective_timeout,
            startup_timeout=args.startup_timeout,
            output=sys.stdout,
        )
    except ValueError as error:
        # launch() checks everything before a worker starts (its docstring).
        raise errors.UsageError(str(error)) from error
    except KeyboardInterrupt:
        print(f"{errors.prefix('launch')}interrupted; workers stopped.", file=sys.stderr)
        return 130
    if result.exit_code == 0:
        print(
            f"parallel-keras launch: {result.message} "
            f"(attempts: {result.attempts}, workers: {','.join(result.addresses)}).",
        )
        print(f"parallel-keras launch: summary: {result.summary()}.")
        return errors.EXIT_OK
    # The worker's own exit code is passed on (as mpirun does): a script's
    # code such as 75 (EX_TEMPFAIL) keeps its meaning for the caller.
    print(
        f"{errors.prefix('launch')}{result.message} "
        f"(attempts: {result.attempts}, workers: {','.join(result.addresses)}).",
        file=sys.stderr,
    )
    print(f"parallel-keras launch: summary: {result.summary()}.", file=sys.stderr)
    return result.exit_code
