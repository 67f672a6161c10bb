# SPDX-License-Identifier: Apache-2.0
"""This process's place in its cluster, from `TF_CONFIG` or a resolver.

`TF_CONFIG` is TensorFlow's own description of a cluster (TensorFlow reads
it too); without it, or with one training task, the process is a one-worker
cluster and nothing multi-worker applies. TensorFlow-free.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tensorflow as tf


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


def worker_info(
    cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver | None = None,
) -> WorkerInfo:
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

    >>> from parallel_keras import multi_worker
    >>> multi_worker.worker_info().num_workers  # doctest: +SKIP
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


_TF_CONFIG_FORM = (
    '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}'
)


def _from_tf_config():
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        return {}, "worker", 0
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"TF_CONFIG must be JSON such as {_TF_CONFIG_FORM}. Received: TF_CONFIG={raw!r}."
        ) from error
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    problem = None
    if not isinstance(config, dict):
        problem = f"a JSON {type(config).__name__}, not an object"
    elif not isinstance(cluster or {}, dict):
        problem = f"its 'cluster' is a {type(cluster).__name__}, not an object of jobs"
    elif not isinstance(task or {}, dict):
        problem = f"its 'task' is a {type(task).__name__}, not an object"
    else:
        for job, tasks in (cluster or {}).items():
            addresses = tasks.values() if isinstance(tasks, dict) else tasks
            if not isinstance(addresses, (list, tuple)) or not all(
                isinstance(address, str) for address in addresses
            ):
                problem = f"its job {job!r} is {tasks!r}, not a list of 'host:port' strings"
                break
    task = task or {}
    task_type, task_id = task.get("type", "worker"), task.get("index", 0)
    if problem is None and not isinstance(task_type, str):
        problem = f"its task type is {task_type!r}, not a job name"
    if problem is None and isinstance(task_id, str) and task_id.strip().isdigit():
        task_id = int(task_id)
    if problem is None and (isinstance(task_id, bool) or not isinstance(task_id, int)):
        problem = f"its task index is {task_id!r}, not a whole number"
    if problem is not None:
        raise ValueError(
            f"TF_CONFIG must be a JSON object such as {_TF_CONFIG_FORM}. "
            f"Received: TF_CONFIG={raw!r}: {problem}. Fix TF_CONFIG (or unset "
            "it to train in one process)."
        )
    return cluster or {}, task_type, task_id


def is_multi_worker(
    cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver | None = None,
) -> bool:
    """True when the cluster has more than one training task.

    Args:
        cluster_resolver: See `worker_info`. Defaults to None (`TF_CONFIG`).

    Returns:
        Whether training spans several worker processes.
    """
    return worker_info(cluster_resolver).num_workers > 1


def cluster_addresses(
    cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver | None = None,
) -> list[str]:
    """`host:port` of every training task, chief first.

    Args:
        cluster_resolver: See `worker_info`. Defaults to None (`TF_CONFIG`).

    Returns:
        The addresses, from the resolver's cluster spec or from `TF_CONFIG`.
    """
    if cluster_resolver is not None:
        spec = cluster_resolver.cluster_spec().as_dict()
    else:
        spec = _from_tf_config()[0]
    addresses: list[str] = []
    for job in ("chief", "worker"):
        tasks = spec.get(job) or []
        addresses.extend(tasks.values() if isinstance(tasks, dict) else tasks)
    return addresses
