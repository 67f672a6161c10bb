# SPDX-License-Identifier: Apache-2.0
"""A worker group started by Slurm's `srun`: checks and `TF_CONFIG`.

`parallel-keras launch --slurm` runs as one task of an `srun` step; the
launcher checks Slurm's environment before anything starts, and the worker's
bootstrap turns it into `TF_CONFIG` with TensorFlow's `SlurmClusterResolver`
(the launcher process never imports TensorFlow).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping

SLURM_VARIABLES = (
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
)


def check_slurm_environment(environ: Mapping[str, str]) -> None:
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
    procid = _count(environ, "SLURM_PROCID", 0, "0, 1, 2...")
    num_tasks = _count(environ, "SLURM_STEP_NUM_TASKS", 1, "4")
    per_node = _tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
    nodes = _node_count(environ["SLURM_STEP_NODELIST"])
    if procid >= num_tasks or sum(per_node) != num_tasks or nodes != len(per_node):
        raise ValueError(
            "Slurm's step variables must agree: SLURM_PROCID below "
            "SLURM_STEP_NUM_TASKS, the tasks of SLURM_STEP_TASKS_PER_NODE "
            "summing to it, one count per node of SLURM_STEP_NODELIST. "
            f"Received: SLURM_PROCID={environ['SLURM_PROCID']!r}, "
            f"SLURM_STEP_NUM_TASKS={environ['SLURM_STEP_NUM_TASKS']!r}, "
            f"SLURM_STEP_TASKS_PER_NODE={environ['SLURM_STEP_TASKS_PER_NODE']!r} "
            f"({sum(per_node)} task(s) on {len(per_node)} node(s)), "
            f"SLURM_STEP_NODELIST={environ['SLURM_STEP_NODELIST']!r} "
            f"({nodes} node(s)). Run through `srun`, which sets them together, "
            "or fix the one set by hand."
        )


# Slurm's compressed forms: "2(x3),1" tasks per node; "node[01-03,7],gpu1" hosts.
_TASKS_PER_NODE = re.compile(r"^\d+(\(x\d+\))?(,\d+(\(x\d+\))?)*$")
_HOST = re.compile(r"^[\w.-]*(\[\d+(-\d+)?(,\d+(-\d+)?)*\][\w.-]*)*$")


def _count(environ: Mapping[str, str], name: str, smallest: int, example: str) -> int:
    value = environ[name].strip()
    if not value.isdigit() or int(value) < smallest:
        raise ValueError(
            f"{name} is a whole number >= {smallest}, as srun sets it. "
            f"Received: {name}={environ[name]!r}. Run through `srun`, or set "
            f"{name} to a number (e.g. {name}={example.split(',')[0]})."
        )
    return int(value)


def _tasks_per_node(value: str) -> list[int]:
    if not _TASKS_PER_NODE.match(value.strip()):
        raise ValueError(
            "SLURM_STEP_TASKS_PER_NODE is Slurm's list of tasks per node, "
            "counts separated by commas, repeats as N(xM). Received: "
            f"SLURM_STEP_TASKS_PER_NODE={value!r}. Run through `srun`, or set "
            "it in that form (e.g. SLURM_STEP_TASKS_PER_NODE=2(x3),1)."
        )
    counts = []
    for part in value.strip().split(","):
        count, _, times = part.partition("(x")
        counts += [int(count)] * (int(times.rstrip(")")) if times else 1)
    return counts


def _node_count(value: str) -> int:
    hosts, depth, start = [], 0, 0
    text = value.strip()
    for position, char in enumerate(text + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth < 0 or depth > 1:
            break
        if char == "," and depth == 0:
            hosts.append(text[start:position])
            start = position + 1
    if depth != 0 or not text or not all(host and _HOST.match(host) for host in hosts):
        raise ValueError(
            "SLURM_STEP_NODELIST is Slurm's host list: names separated by "
            "commas, numbered ranges in brackets. Received: "
            f"SLURM_STEP_NODELIST={value!r}. Run through `srun`, or set it in "
            "that form (e.g. SLURM_STEP_NODELIST=node[01-03],gpu7)."
        )
    total = 0
    for host in hosts:
        count = 1
        for ranges in re.findall(r"\[([^\]]*)\]", host):
            count *= sum(
                int(b) - int(a) + 1 if b else 1
                for a, _, b in (item.partition("-") for item in ranges.split(","))
            )
        total += count
    return total


def tf_config_from_slurm(port_base: int, environ: Mapping[str, str]) -> str:
    """This Slurm task's `TF_CONFIG`, from `SlurmClusterResolver`.

    TensorFlow's resolver hands out one port per task on each node from
    `port_base` and, by default, GPUs by `nvidia-smi`; on nodes without
    GPUs (and to rehearse on CPUs) every task gets no GPU.
    """
    import tensorflow as tf

    from parallel_keras import _internals

    kwargs = {"port_base": port_base}
    if not environ.get("CUDA_VISIBLE_DEVICES") and not shutil.which("nvidia-smi"):
        tasks = _internals.expand_slurm_tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
        kwargs.update(gpus_per_node=max(tasks), gpus_per_task=1, auto_set_gpu=False)
    resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(**kwargs)
    spec = resolver.cluster_spec().as_dict()
    return json.dumps(
        {"cluster": spec, "task": {"type": resolver.task_type, "index": resolver.task_id}}
    )
