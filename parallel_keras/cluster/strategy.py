# SPDX-License-Identifier: Apache-2.0
"""The one strategy that spans a cluster: `MultiWorkerMirroredStrategy`.

A script runs on one machine or many unchanged: when `TF_CONFIG` (or a
cluster resolver, e.g. Slurm's) describes more than one worker,
`multi_gpu_model` replicates across every local device of every worker with
`tf.distribute.MultiWorkerMirroredStrategy` (MWMS); otherwise nothing here
applies.

MWMS must be created before TensorFlow starts (before any tensor, model or
device listing) and only once per process. `parallel-keras launch` does this
for the scripts it starts; a script started some other way calls
`parallel_keras.multi_worker.initialize()` on its first lines.

Each collective carries a timeout (`settings.collective_timeout`, 60 s
unless the launcher says otherwise), so when a worker dies the survivors fail
with an error instead of waiting for it forever.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from absl import logging

from parallel_keras.cluster import membership, settings

if TYPE_CHECKING:
    import tensorflow as tf

# TensorFlow is imported inside the functions that need it: the launcher
# and the bootstrap import this module without starting TensorFlow.

_LOCK = threading.Lock()
_STRATEGY: tf.distribute.MultiWorkerMirroredStrategy | None = None


def _start_watchdog(info: membership.WorkerInfo, cluster_resolver):
    """Starts `startup_watchdog.py` for this worker; close its stdin to stop."""
    import subprocess
    import sys

    return subprocess.Popen(
        [
            sys.executable,
            os.path.join(os.path.dirname(__file__), "startup_watchdog.py"),
            str(os.getpid()),
            str(settings.current().startup_timeout),
            str(info.worker_index),
            *membership.cluster_addresses(cluster_resolver),
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
            multi-GPU workers on CPUs. Defaults to None: the launcher's
            `--devices-per-worker` (`settings.current()`), else every local
            GPU (one CPU when there is none).
        timeout_seconds: Timeout of each collective. Defaults to None: the
            launcher's `--collective-timeout`, else 60.
        cluster_resolver: See `membership.worker_info`. Defaults to None
            (`TF_CONFIG`).

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
        info = membership.worker_info(cluster_resolver)
        if info.num_workers <= 1:
            return None
        if devices_per_worker is None:
            devices_per_worker = settings.current().devices_per_worker
        if devices_per_worker is not None and (
            isinstance(devices_per_worker, bool) or devices_per_worker < 1
        ):
            raise ValueError(
                "devices_per_worker must be a positive integer. Received: "
                f"devices_per_worker={devices_per_worker!r}."
            )
        if timeout_seconds is None:
            timeout_seconds = settings.current().collective_timeout
        import tensorflow as tf

        from parallel_keras import _internals
        from parallel_keras.cluster import prepared

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
        # the others waiting forever.
        # No Python thread runs while it waits, so the bound is a process.
        watchdog = _start_watchdog(info, cluster_resolver)
        try:
            strategy = _internals.multi_worker_mirrored_strategy(
                options,
                strategy_class=prepared.PreparedMultiWorkerMirroredStrategy,
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


def multi_worker_strategy_or_none(
    local_devices: Sequence[str] | None = None,
    cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver | None = None,
) -> tf.distribute.MultiWorkerMirroredStrategy | None:
    """The strategy `multi_gpu_model` must use when this is a cluster worker.

    The hook `data_parallel.strategies.replication_strategy` calls first.

    Args:
        local_devices: The devices the caller asked for on this worker; in a
            cluster every local device is used, so they are only logged.
            Defaults to None.
        cluster_resolver: See `membership.worker_info`. Defaults to None
            (`TF_CONFIG`).

    Returns:
        The process's `MultiWorkerMirroredStrategy`, or None on one worker.

    Raises:
        RuntimeError: If this is a cluster worker, no strategy was created
            yet and TensorFlow already started.
    """
    if _STRATEGY is None and not membership.is_multi_worker(cluster_resolver):
        return None
    strategy = initialize(cluster_resolver=cluster_resolver)
    if strategy is None:
        raise RuntimeError(
            "parallel_keras found a multi-worker cluster but created no strategy "
            "for it. Received: a cluster description that changed between two "
            "reads. Set TF_CONFIG (or the cluster resolver) once, before training."
        )
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


def local_device_count() -> int | None:
    """Devices per worker of this process's strategy; None before it exists."""
    if _STRATEGY is None:
        return None
    return len(_STRATEGY.extended.worker_devices)


def current_strategy() -> tf.distribute.MultiWorkerMirroredStrategy | None:
    """The strategy `initialize` created in this process, if any."""
    return _STRATEGY


def simulate_on_worker(n: int) -> bool:
    """`simulate_devices(n)` on a worker of a multi-worker cluster.

    There the devices belong to the multi-worker strategy, which must be
    created with them before TensorFlow starts: the script's own
    `simulate_devices(n)` decides how many.

    Returns:
        False outside a cluster (nothing done), True once this worker's
        strategy has `n` devices.
    """
    if current_strategy() is None and not membership.is_multi_worker():
        return False
    launcher = settings.current().devices_per_worker
    if launcher is not None and launcher != n:
        raise ValueError(
            "The script's simulate_devices(n) and the launcher's "
            "--devices-per-worker must agree on the devices of each worker. "
            f"Received: simulate_devices({n}) in the script and "
            f"--devices-per-worker {launcher} on `parallel-keras launch`. "
            f"Drop --devices-per-worker, or pass --devices-per-worker {n}."
        )
    local = local_device_count()
    if local is None:
        initialize(devices_per_worker=n)
    elif local != n:
        raise RuntimeError(
            "Under `parallel-keras launch`, simulate_devices(n) must run "
            "before the script touches TensorFlow, because each worker's "
            "devices are fixed when TensorFlow starts. Received: "
            f"simulate_devices({n}) after TensorFlow had started this worker "
            f"with {local} device(s). Move `parallel_keras.simulate_devices("
            f"{n})` to the script's first lines, above any model, tensor or "
            f"device listing, or pass --devices-per-worker {n} to "
            "`parallel-keras launch`."
        )
    return True
