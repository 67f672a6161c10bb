# SPDX-License-Identifier: Apache-2.0
"""What the launcher tells each worker, through the worker's environment.

The launcher (`launch`) writes these variables into each worker's
environment; the worker's entry point (`bootstrap`, `run_function`) reads
them once, into `cluster.settings`, before the script runs. They are the
only `PARALLEL_KERAS_*` variables read, and only here, at entry points.
TensorFlow-free.
"""

from __future__ import annotations

from collections.abc import Mapping

from parallel_keras.cluster import settings as cluster_settings

DEVICES_PER_WORKER_ENV = "PARALLEL_KERAS_DEVICES_PER_WORKER"
COLLECTIVE_TIMEOUT_ENV = "PARALLEL_KERAS_COLLECTIVE_TIMEOUT"
STARTUP_TIMEOUT_ENV = "PARALLEL_KERAS_STARTUP_TIMEOUT"
WORKER_TEMP_ROOT_ENV = "PARALLEL_KERAS_WORKER_TEMP_ROOT"
CLUSTER_ENV = "PARALLEL_KERAS_CLUSTER"  # "slurm": read the cluster from Slurm.
SLURM_PORT_BASE_ENV = "PARALLEL_KERAS_SLURM_PORT_BASE"
# Read by training scripts, not by parallel_keras: which attempt this is.
RESTART_ENV = "PARALLEL_KERAS_RESTART"


def worker_environ(
    *,
    devices_per_worker: int | None = None,
    collective_timeout: float | None = None,
    startup_timeout: float | None = None,
    worker_temp_root: str | None = None,
    slurm_port_base: int | None = None,
) -> dict[str, str]:
    """The variables the launcher adds to every worker's environment."""
    environ = {}
    if devices_per_worker is not None:
        environ[DEVICES_PER_WORKER_ENV] = str(int(devices_per_worker))
    if collective_timeout is not None:
        environ[COLLECTIVE_TIMEOUT_ENV] = str(float(collective_timeout))
    if startup_timeout is not None:
        environ[STARTUP_TIMEOUT_ENV] = str(float(startup_timeout))
    if worker_temp_root is not None:
        environ[WORKER_TEMP_ROOT_ENV] = worker_temp_root
    if slurm_port_base is not None:
        environ[CLUSTER_ENV] = "slurm"
        environ[SLURM_PORT_BASE_ENV] = str(int(slurm_port_base))
    return environ


def settings_from_environ(environ: Mapping[str, str]) -> cluster_settings.ClusterSettings:
    """This worker's settings, from what the launcher put in `environ`.

    Raises:
        ValueError: If the collective timeout is not a positive number.
    """
    devices = environ.get(DEVICES_PER_WORKER_ENV)
    startup = environ.get(STARTUP_TIMEOUT_ENV)
    return cluster_settings.ClusterSettings(
        devices_per_worker=int(devices) if devices else None,
        collective_timeout=_collective_timeout(environ.get(COLLECTIVE_TIMEOUT_ENV)),
        startup_timeout=(float(startup) if startup else cluster_settings.DEFAULT_STARTUP_TIMEOUT),
        worker_temp_root=environ.get(WORKER_TEMP_ROOT_ENV) or None,
    )


def _collective_timeout(raw: str | None) -> float:
    if not raw:
        return cluster_settings.DEFAULT_COLLECTIVE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(
            f"{COLLECTIVE_TIMEOUT_ENV} must be a positive number of seconds. "
            f"Received: {raw!r}. Set e.g. {COLLECTIVE_TIMEOUT_ENV}=60."
        )
    return value


def slurm_port_base(environ: Mapping[str, str]) -> int | None:
    """The first Slurm port when the launcher ran with `--slurm`, else None."""
    if environ.get(CLUSTER_ENV) != "slurm":
        return None
    return int(environ.get(SLURM_PORT_BASE_ENV) or 8888)
