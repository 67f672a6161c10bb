"""The cluster a process belongs to, and the one strategy that spans it.

A script runs on one machine or many unchanged: when `TF_CONFIG` (or a
cluster resolver, e.g. Slurm's) describes more than one worker,
`multi_gpu_model` replicates across every local device of every worker with
`tf.distribute.MultiWorkerMirroredStrategy` (MWMS); otherwise nothing here
applies.

MWMS must be created before TensorFlow starts (before any tensor, model or
device listing) and only once per process. `parallel-keras launch` does this
for the scripts it starts; a script started some other way calls
`parallel_keras.multi_worker.initialize()` on its first lines.

Each collective carries a timeout (`collective_timeout`, 60 s unless set), so
when a worker dies the survivors fail with an error instead of waiting for
it forever.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading

from typing import TYPE_CHECKING

from absl import logging

if TYPE_CHECKING:
    import tensorflow as tf

# TensorFlow is imported inside the functions that need it: the launcher
# reads this module's settings without starting TensorFlow.

DEVICES_PER_WORKER_ENV = "PARALLEL_KERAS_DEVICES_PER_WORKER"
COLLECTIVE_TIMEOUT_ENV = "PARALLEL_KERAS_COLLECTIVE_TIMEOUT"
DEFAULT_COLLECTIVE_TIMEOUT = 60.0
STARTUP_TIMEOUT_ENV = "PARALLEL_KERAS_STARTUP_TIMEOUT"
DEFAULT_STARTUP_TIMEOUT = 120.0

SLURM_VARIABLES = (
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
)


def check_slurm_environment(environ) -> None:
    """Raises ValueError naming each Slurm variable `environ` lacks."""
    missing = [name for name in SLURM_VARIABLES if not environ.get(name)]
    if missing:
        raise ValueError(
            "--slurm reads the cluster from the environment srun gives each "
            f"task ({', '.join(SLURM_VARIABLES)}). Received: no "
            f"{', '.join(missing)}. Run `parallel-keras launch --slurm` "
            "through `srun` inside an sbatch allocation, or use --workers / "
            "--hosts outside Slurm."
        )


_LOCK = threading.Lock()
_STRATEGY: tf.distribute.MultiWorkerMirroredStrategy | None = None


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Where this process sits in its cluster.

    Attributes:
        task_type: `"worker"` or `"chief"`.
        task_id: Index within `task_type`.
        worker_index: Index among all training tasks (chief first), 0-based.
        num_workers: Number of training tasks (chief and workers).
        is_chief: Whether this task writes the files the user sees.
    """

    task_type: str
    task_id: int
    worker_index: int
    num_workers: int
    is_chief: bool


def worker_info(cluster_resolver=None) -> WorkerInfo:
    """Describes this process's place in the cluster.

    Args:
        cluster_resolver: A `tf.distribute.cluster_resolver.ClusterResolver`
            (e.g. `SlurmClusterResolver()`). Defaults to None: read
            `TF_CONFIG`; without it this is a one-worker cluster.

    Returns:
        A `WorkerInfo`; the one-process case is worker 0 of 1, chief.

    Raises:
        ValueError: If `TF_CONFIG` is not valid JSON or names no task of
            this process in its cluster.

    Example:

    >>> from parallel_keras.multi_worker import cluster
    >>> cluster.worker_info().num_workers  # doctest: +SKIP
    1
    """
    if cluster_resolver is None:
        spec, task_type, task_id = _from_tf_config()
    else:
        spec = cluster_resolver.cluster_spec().as_dict()
        task_type, task_id = cluster_resolver.task_type, cluster_resolver.task_id
    training = [job for job in ("chief", "worker") if job in spec]
    if not training:
        return WorkerInfo("worker", 0, 0, 1, True)
    counts = {job: _num_tasks(spec[job]) for job in training}
    if task_type not in counts or not 0 <= int(task_id) < counts[task_type]:
        raise ValueError(
            "The cluster spec must list this process's task. Received: "
            f"task type={task_type!r}, index={task_id!r}, cluster jobs="
            f"{counts}. Set TF_CONFIG's 'task' to one of the listed tasks."
        )
    task_id = int(task_id)
    offset = counts.get("chief", 0) if task_type == "worker" else 0
    has_chief = "chief" in counts
    return WorkerInfo(
        task_type=task_type,
        task_id=task_id,
        worker_index=offset + task_id,
        num_workers=sum(counts.values()),
        is_chief=(task_type == "chief") or (not has_chief and task_id == 0),
    )


def _num_tasks(tasks) -> int:
    return len(tasks) if isinstance(tasks, (list, tuple, dict)) else 1


def _from_tf_config():
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        return {}, "worker", 0
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(
            "TF_CONFIG must be JSON such as {\"cluster\": {\"worker\": "
            "[\"host1:port\", \"host2:port\"]}, \"task\": {\"type\": "
            f"\"worker\", \"index\": 0}}}}. Received: TF_CONFIG={raw!r}."
        ) from error
    task = config.get("task") or {}
    return config.get("cluster") or {}, task.get("type", "worker"), task.get("index", 0)


def is_multi_worker(cluster_resolver=None) -> bool:
    """True when the cluster has more than one training task.

    Args:
        cluster_resolver: See `worker_info`. Defaults to None (`TF_CONFIG`).

    Returns:
        Whether training spans several worker processes.
    """
    return worker_info(cluster_resolver).num_workers > 1


def collective_timeout() -> float:
    """Seconds a collective waits for its peers before failing."""
    raw = os.environ.get(COLLECTIVE_TIMEOUT_ENV)
    if not raw:
        return DEFAULT_COLLECTIVE_TIMEOUT
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


def startup_timeout() -> float:
    """Seconds a worker waits for all the others to start."""
    raw = os.environ.get(STARTUP_TIMEOUT_ENV)
    return float(raw) if raw else DEFAULT_STARTUP_TIMEOUT


def _cluster_addresses(cluster_resolver=None) -> list[str]:
    if cluster_resolver is not None:
        spec = cluster_resolver.cluster_spec().as_dict()
    else:
        spec = _from_tf_config()[0]
    addresses = []
    for job in ("chief", "worker"):
        tasks = spec.get(job) or []
        addresses.extend(tasks.values() if isinstance(tasks, dict) else tasks)
    return addresses


def _start_watchdog(info: WorkerInfo, cluster_resolver):
    """Starts `startup_watchdog.py` for this worker; close its stdin to stop."""
    import subprocess  # pylint: disable=g-import-not-at-top
    import sys  # pylint: disable=g-import-not-at-top

    return subprocess.Popen(
        [
            sys.executable,
            os.path.join(os.path.dirname(__file__), "startup_watchdog.py"),
            str(os.getpid()),
            str(startup_timeout()),
            str(info.worker_index),
            *_cluster_addresses(cluster_resolver),
        ],
        stdin=subprocess.PIPE,
    )


def initialize(
    devices_per_worker: int | None = None,
    timeout_seconds: float | None = None,
    cluster_resolver=None,
) -> tf.distribute.MultiWorkerMirroredStrategy | None:
    """Creates this process's multi-worker strategy, if it is in a cluster.

    Call it first thing in a script that may run as one worker of many
    (`parallel-keras launch` calls it for you). Later calls return the same
    strategy. In a one-worker process it does nothing and returns None.

    Args:
        devices_per_worker: Simulated CPU devices per worker, to rehearse
            multi-GPU workers on CPUs. Defaults to None: the
            `PARALLEL_KERAS_DEVICES_PER_WORKER` environment variable, else
            every local GPU (one CPU when there is none).
        timeout_seconds: Timeout of each collective. Defaults to None:
            `PARALLEL_KERAS_COLLECTIVE_TIMEOUT`, else 60.
        cluster_resolver: See `worker_info`. Defaults to None (`TF_CONFIG`).

    Returns:
        The `MultiWorkerMirroredStrategy`, or None on one worker.

    Raises:
        RuntimeError: If TensorFlow already started in this process.
        ValueError: If the cluster description or a setting is invalid.

    Example:

    >>> from parallel_keras import multi_worker
    >>> strategy = multi_worker.initialize()  # None without TF_CONFIG
    """
    global _STRATEGY
    with _LOCK:
        if _STRATEGY is not None:
            return _STRATEGY
        info = worker_info(cluster_resolver)
        if info.num_workers <= 1:
            return None
        if devices_per_worker is None:
            raw = os.environ.get(DEVICES_PER_WORKER_ENV)
            devices_per_worker = int(raw) if raw else None
        if devices_per_worker is not None and (
            isinstance(devices_per_worker, bool) or devices_per_worker < 1
        ):
            raise ValueError(
                "devices_per_worker must be a positive integer. Received: "
                f"devices_per_worker={devices_per_worker!r}."
            )
        if timeout_seconds is None:
            timeout_seconds = collective_timeout()
        import tensorflow as tf  # pylint: disable=g-import-not-at-top

        from parallel_keras import _internals  # pylint: disable=g-import-not-at-top
        from parallel_keras.data_parallel import batches  # pylint: disable=g-import-not-at-top

        # Creating the strategy starts TensorFlow: the bootstrap's deferred
        # creation (run_before_tf_starts) must not fire inside it.
        _internals.cancel_before_tf_starts()
        if _internals.tf_runtime_initialized():
            raise RuntimeError(
                "The multi-worker strategy must be created before TensorFlow "
                "starts (before any model, tensor or device listing). "
                f"Received: TF_CONFIG with {info.num_workers} workers, but "
                "TensorFlow is already running in this process. Start the "
                "script with `parallel-keras launch`, or call "
                "parallel_keras.multi_worker.initialize() on its first lines."
            )
        if devices_per_worker and devices_per_worker > 1:
            physical = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                physical,
                [tf.config.LogicalDeviceConfiguration()] * devices_per_worker,
            )
        options = tf.distribute.experimental.CommunicationOptions(
            timeout_seconds=float(timeout_seconds)
        )
        # MWMS waits in its constructor, without a timeout, until every
        # worker has started; a worker that died during start-up would leave
        # the others waiting forever (issue 12).
        # No Python thread runs while it waits, so the bound is a process.
        watchdog = _start_watchdog(info, cluster_resolver)
        try:
            strategy = _internals.multi_worker_mirrored_strategy(
                options,
                strategy_class=batches.PreparedMultiWorkerMirroredStrategy,
                cluster_resolver=cluster_resolver,
                local_cpu_devices=devices_per_worker
                if devices_per_worker and not tf.config.list_physical_devices("GPU")
                else None,
            )
        finally:
            watchdog.stdin.close()
            watchdog.wait()
        workaround = _internals.install_scalar_mean_reduction_workaround(strategy)
        logging.info(
            "parallel_keras: worker %d of %d (%s), %d local replica(s), "
            "%d in all; collective timeout %.0f s; Keras metric reduction "
            "workaround %s.",
            info.worker_index,
            info.num_workers,
            "chief" if info.is_chief else "not chief",
            len(strategy.extended.worker_devices),
            strategy.num_replicas_in_sync,
            timeout_seconds,
            "on" if workaround else "not needed",
        )
        _STRATEGY = strategy
        return strategy


def multi_worker_strategy_or_none(local_devices=None, cluster_resolver=None):
    """The strategy `multi_gpu_model` must use when this is a cluster worker.

    The hook `data_parallel.strategies.replication_strategy` calls first.

    Args:
        local_devices: The devices the caller asked for on this worker; in a
            cluster every local device is used, so they are only logged.
            Defaults to None.
        cluster_resolver: See `worker_info`. Defaults to None (`TF_CONFIG`).

    Returns:
        The process's `MultiWorkerMirroredStrategy`, or None on one worker.

    Raises:
        RuntimeError: If this is a cluster worker, no strategy was created
            yet and TensorFlow already started.
    """
    if _STRATEGY is None and not is_multi_worker(cluster_resolver):
        return None
    strategy = initialize(cluster_resolver=cluster_resolver)
    local = len(strategy.extended.worker_devices)
    if local_devices is not None and len(local_devices) != local:
        logging.info(
            "parallel_keras: multi-worker training replicates on the %d local "
            "device(s) fixed at start-up on each worker (%d replicas in "
            "all); the %d device(s) requested here are not used as such.",
            local,
            strategy.num_replicas_in_sync,
            len(local_devices),
        )
    return strategy


def launcher_devices_per_worker() -> int | None:
    """The `--devices-per-worker` the launcher gave this worker, if any."""
    raw = os.environ.get(DEVICES_PER_WORKER_ENV)
    return int(raw) if raw else None


def local_device_count() -> int | None:
    """Devices per worker of this process's strategy; None before it exists."""
    if _STRATEGY is None:
        return None
    return len(_STRATEGY.extended.worker_devices)


def current_strategy() -> tf.distribute.MultiWorkerMirroredStrategy | None:
    """The strategy `initialize` created in this process, if any."""
    return _STRATEGY
