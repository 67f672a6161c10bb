# SPDX-License-Identifier: Apache-2.0
"""Which workers of a group run on this machine, and at which addresses.

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

import dataclasses
import errno
import json
import socket
from collections.abc import Callable, Mapping, Sequence

from parallel_keras.multi_worker import slurm as slurm_lib

LOOPBACK = "127.0.0.1"


@dataclasses.dataclass
class GroupPlan:
    """Which workers run here and at which addresses.

    Attributes:
        addresses: (group size) -> list of "host:port"; None keeps the size.
        indices: Indices of the workers this machine runs.
        min_workers: Fewest survivors a shrinking group restarts with, or
            None to restart the whole group.
    """

    addresses: Callable[[int | None], list[str]]
    indices: list[int]
    min_workers: int | None = None


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


def plan_group(workers, hosts, index, slurm, min_workers, environ: Mapping[str, str]) -> GroupPlan:
    """Checks the mode arguments of `launch`; raises ValueError if invalid."""
    given = [name for name, value in (("workers", workers), ("hosts", hosts)) if value is not None]
    if slurm:
        given.append("slurm")
    if len(given) != 1:
        raise ValueError(
            "launch needs either workers=N (all on this machine), hosts with "
            "an index (one machine of a cluster) or slurm=True (one task of "
            f"srun), exactly one of them. Received: workers={workers!r}, "
            f"hosts={hosts!r}, slurm={slurm!r}. Pass e.g. workers=2 "
            "(--workers 2 on the command line), or hosts=[...] with index=i."
        )
    if min_workers is not None:
        if workers is None:
            raise ValueError(
                "--min-workers applies to a group on this machine. Received: "
                f"min_workers={min_workers!r} with {given[0]}. Use "
                "--workers N --min-workers M, or drop --min-workers."
            )
        if (
            isinstance(min_workers, bool)
            or not isinstance(min_workers, int)
            or not (1 <= min_workers <= (workers if isinstance(workers, int) else 0))
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
        slurm_lib.check_slurm_environment(environ)
        return GroupPlan(lambda size: [], [int(environ["SLURM_PROCID"])])
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(
                f"workers must be an integer >= 1. Received: workers={workers!r}. "
                "Pass e.g. workers=2 (--workers 2 on the command line)."
            )
        if index is not None:
            raise ValueError(
                "index is only meaningful with hosts. Received: "
                f"workers={workers}, index={index}. Drop --index."
            )
        return GroupPlan(
            lambda size: [f"{LOOPBACK}:{port}" for port in pick_loopback_ports(size or workers)],
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
    return GroupPlan(lambda size: hosts, [index])


def check_port_free(address: str) -> None:
    """Raises ValueError, saying how to free it, if `address`'s port is taken."""
    host, _, port = address.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", int(port)))
        except OSError as error:
            if error.errno == errno.EACCES:
                advice = (
                    f"Ports below 1024 need root; give this worker a port "
                    f"above 1024 in --hosts (e.g. {host}:2222)."
                )
            else:
                # `ss -tanp`: every TCP socket, not only listeners; a client
                # connection or a worker of an earlier run can hold it too.
                advice = (
                    f"Find what holds it (`ss -tanp | grep :{port}`; a worker "
                    "of an earlier launch that is still running holds it "
                    "too) and stop that, or give this worker another port "
                    "in --hosts."
                )
            raise ValueError(
                "This machine's worker needs its port free for TensorFlow's "
                f"gRPC server. Received: port {port} of {address} (--hosts "
                f"entry of this --index) is "
                f"{'in use' if error.errno == errno.EADDRINUSE else 'not available'} "
                f"({error.strerror}). {advice}"
            ) from None
