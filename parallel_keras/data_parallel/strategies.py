"""The tf.distribute strategies behind `multi_gpu_model`'s legacy options.

The legacy function built one tower per GPU and merged their outputs. On
tf.distribute the same choices become a strategy and a reduction:

| legacy option          | strategy                  | gradient reduction    |
|------------------------|---------------------------|-----------------------|
| cpu_merge=True         | MirroredStrategy          | reduced on `/cpu:0`,  |
| (default)              | (weights on each replica) | then broadcast        |
| cpu_merge=False        | MirroredStrategy          | all-reduce among the  |
|                        |                           | replicas (collective) |
| cpu_relocation=True    | CentralStorageStrategy    | on `/cpu:0`, where    |
|                        | (weights on `/cpu:0` only)| the weights live      |

One strategy is kept per (devices, options), so re-running a notebook cell
reuses it instead of creating a new one each time.
"""

from __future__ import annotations

from collections.abc import Sequence
import threading

import tensorflow as tf

from parallel_keras import _internals
from parallel_keras.multi_worker import cluster as multi_worker_cluster

_CACHE: dict[tuple, tf.distribute.Strategy] = {}
_LOCK = threading.Lock()


def replication_strategy(
    replica_devices: Sequence[str], cpu_merge: bool = True, cpu_relocation: bool = False
) -> tf.distribute.Strategy:
    """Returns the (cached) strategy replicating over `replica_devices`.

    Args:
        replica_devices: Fully qualified device names, one per replica.
        cpu_merge: Reduce gradients through the CPU instead of an all-reduce
            among the replicas. Defaults to True.
        cpu_relocation: Keep the variables on the CPU, computing on the
            replicas. Defaults to False.

    Returns:
        A `tf.distribute.Strategy` with one replica per device.
    """
    # Multi-worker (issue 5): a TF_CONFIG cluster replicates on every worker.
    cluster_strategy = multi_worker_cluster.multi_worker_strategy_or_none(replica_devices)
    if cluster_strategy is not None:
        return cluster_strategy
    key = (tuple(replica_devices), bool(cpu_merge), bool(cpu_relocation))
    with _LOCK:
        strategy = _CACHE.get(key)
        if strategy is None:
            strategy = _build(list(replica_devices), cpu_merge, cpu_relocation)
            _CACHE[key] = strategy
        return strategy


def _build(devices: list[str], cpu_merge: bool, cpu_relocation: bool):
    if cpu_relocation:
        return tf.distribute.experimental.CentralStorageStrategy(
            compute_devices=devices, parameter_device="/cpu:0"
        )
    if cpu_merge:
        cross_device_ops = tf.distribute.ReductionToOneDevice(
            reduce_to_device="/cpu:0"
        )
    else:
        cross_device_ops = _internals.collective_all_reduce(devices)
    return tf.distribute.MirroredStrategy(
        devices=devices, cross_device_ops=cross_device_ops
    )


def describe(strategy: tf.distribute.Strategy) -> str:
    """A short human-readable name for a strategy, for logs and reprs."""
    return (
        f"{type(strategy).__name__}"
        f"(replicas={strategy.num_replicas_in_sync})"
    )
