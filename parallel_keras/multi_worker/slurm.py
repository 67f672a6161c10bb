# SPDX-License-Identifier: Apache-2.0
"""A worker group started by Slurm's `srun`: checks and `TF_CONFIG`.

`parallel-keras launch --slurm` runs as one task of an `srun` step; the
launcher checks Slurm's environment before anything starts, and the worker's
bootstrap turns it into `TF_CONFIG` with TensorFlow's `SlurmClusterResolver`
(the launcher process never imports TensorFlow).
"""

from __future__ import annotations

import json
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
