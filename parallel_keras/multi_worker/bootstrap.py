"""What each worker process started by `parallel-keras launch` runs.

`python -m parallel_keras.multi_worker.bootstrap script.py [args...]`
runs the script as `__main__` with its own arguments, exactly as
`python script.py args` would, and creates the multi-worker strategy at the
last moment it can (see `cluster.initialize`): when the script calls
`simulate_devices(n)` (each worker then gets n devices), or else right before
TensorFlow starts. It never starts TensorFlow itself, so the script's first
lines still configure it, as they do when it runs alone.

A worker whose peers died fails inside a collective once the collective
timeout expires; that error is turned into a one-line explanation and exit
code `LOST_PEER_EXIT_CODE`, instead of a long TensorFlow traceback or a hang.
"""

from __future__ import annotations

import os
import runpy
import sys

LOST_PEER_EXIT_CODE = 75  # EX_TEMPFAIL: another attempt may succeed.
CLUSTER_ENV = "PARALLEL_KERAS_CLUSTER"  # "slurm": read the cluster from Slurm.
SLURM_PORT_BASE_ENV = "PARALLEL_KERAS_SLURM_PORT_BASE"


def _tf_config_from_slurm(port_base: int) -> str:
    """This Slurm task's `TF_CONFIG`, from `SlurmClusterResolver`.

    TensorFlow's resolver hands out one port per task on each node from
    `port_base` and, by default, GPUs by `nvidia-smi`; on nodes without
    GPUs (and to rehearse on CPUs) every task gets no GPU.
    """
    import json  # pylint: disable=g-import-not-at-top
    import shutil  # pylint: disable=g-import-not-at-top

    from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver  # pylint: disable=g-direct-tensorflow-import

    kwargs = {"port_base": port_base}
    if not os.environ.get("CUDA_VISIBLE_DEVICES") and not shutil.which("nvidia-smi"):
        tasks = slurm_cluster_resolver.expand_tasks_per_node(
            os.environ["SLURM_STEP_TASKS_PER_NODE"]
        )
        kwargs.update(gpus_per_node=max(tasks), gpus_per_task=1, auto_set_gpu=False)
    resolver = slurm_cluster_resolver.SlurmClusterResolver(**kwargs)
    spec = resolver.cluster_spec().as_dict()
    return json.dumps(
        {"cluster": spec, "task": {"type": resolver.task_type, "index": resolver.task_id}}
    )


def _lost_peer_errors():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    return (
        tf.errors.DeadlineExceededError,
        tf.errors.UnavailableError,
        tf.errors.AbortedError,
        tf.errors.CancelledError,
    )


def create_strategy_when_tf_starts(info) -> None:
    from parallel_keras import _internals  # pylint: disable=g-import-not-at-top
    from parallel_keras.multi_worker import cluster  # pylint: disable=g-import-not-at-top

    devices_per_worker = cluster.launcher_devices_per_worker()

    def create():
        if info.num_workers > 1:
            cluster.initialize()
            return
        if devices_per_worker and devices_per_worker > 1:
            import tensorflow as tf  # pylint: disable=g-import-not-at-top

            physical = tf.config.list_physical_devices("CPU")[0]
            if tf.config.get_logical_device_configuration(physical) is None:
                tf.config.set_logical_device_configuration(
                    physical,
                    [tf.config.LogicalDeviceConfiguration()] * devices_per_worker,
                )

    _internals.run_before_tf_starts(create)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write(
            "usage: python -m parallel_keras.multi_worker.bootstrap script.py "
            "[args...]\n"
        )
        return 2
    script, script_args = argv[1], argv[2:]
    from parallel_keras.multi_worker import cluster  # pylint: disable=g-import-not-at-top
    from parallel_keras.multi_worker import writes  # pylint: disable=g-import-not-at-top

    if os.environ.get(CLUSTER_ENV) == "slurm":
        try:
            cluster.check_slurm_environment(os.environ)
        except ValueError as error:
            sys.stderr.write(f"parallel_keras: {error}\n")
            return 2
        os.environ["TF_CONFIG"] = _tf_config_from_slurm(
            int(os.environ.get(SLURM_PORT_BASE_ENV) or 8888)
        )
    info = cluster.worker_info()
    create_strategy_when_tf_starts(info)
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except _lost_peer_errors() as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        sys.stderr.write(
            f"parallel_keras: worker {info.worker_index} lost contact with the "
            "other workers (one of them died or stopped responding within "
            f"the collective timeout of {cluster.collective_timeout():.0f} s). "
            f"{type(error).__name__}: {first_line[:300]}\n"
        )
        return LOST_PEER_EXIT_CODE
    finally:
        writes.cleanup()
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
