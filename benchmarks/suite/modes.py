# SPDX-License-Identifier: Apache-2.0
"""The parallelism modes the suite compares, and how each one is set up.

| mode              | what runs                                               |
|-------------------|---------------------------------------------------------|
| `single`          | the model on one device, no strategy                    |
| `multi_gpu_model` | `parallel_keras.multi_gpu_model(model, gpus=N)` (shim)  |
| `mirrored`        | a hand-written `MirroredStrategy` scope around the same |
|                   | model: the native baseline the shim is judged against   |
| `cpu_relocation`  | `multi_gpu_model(..., cpu_relocation=True)`             |
| `device_parallel` | the model's branches on N devices, `parallel_keras.device` |
| `multi_worker`    | N worker processes of 1 device each, started by         |
|                   | `parallel-keras launch --workers N`                     |

Every mode trains the same model on the same global batch (the batch is
split across replicas, as the legacy `multi_gpu_model` did), so their step
times compare directly. `setup(...)` runs inside the measuring process.
"""

from __future__ import annotations

import dataclasses
import functools
import time

from benchmarks.suite import models

SINGLE = "single"
MULTI_GPU_MODEL = "multi_gpu_model"
MIRRORED = "mirrored"
CPU_RELOCATION = "cpu_relocation"
DEVICE_PARALLEL = "device_parallel"
MULTI_WORKER = "multi_worker"

MODES = (SINGLE, MIRRORED, MULTI_GPU_MODEL, CPU_RELOCATION, DEVICE_PARALLEL, MULTI_WORKER)


def check_names(names) -> list[str]:
    """Validates mode names.

    Raises:
        ValueError: If a name is not a known mode.
    """
    unknown = [name for name in names if name not in MODES]
    if unknown:
        raise ValueError(
            f"Unknown benchmark mode(s). Received: {unknown}. Choose from {list(MODES)}."
        )
    return list(names)


def not_applicable(model: str, mode: str, replicas: int, global_batch_size: int) -> str | None:
    """Why (model, mode, replicas) is not a run, or None when it is one."""
    if mode == SINGLE and replicas != 1:
        return "single runs on one device"
    if mode in (MULTI_GPU_MODEL, CPU_RELOCATION, MULTI_WORKER) and replicas < 2:
        return f"{mode} needs at least 2 replicas"
    if mode == DEVICE_PARALLEL:
        branches = models.MODELS[model].branches
        if branches < 2:
            return "device_parallel needs a model with independent branches"
        if not 2 <= replicas <= branches:
            return f"{model} has {branches} branches to place"
        return None
    if global_batch_size % replicas:
        return f"global batch {global_batch_size} does not split evenly over {replicas} replicas"
    return None


@dataclasses.dataclass
class Prepared:
    """A compiled model ready to `fit`, and what setting it up took."""

    model: object
    setup_s: float
    devices: list[str]
    # How gradients are combined across replicas ("none" on one device).
    gradient_reduction: str


def _compile(model) -> None:
    import keras

    # jit_compile=False everywhere: every mode runs the same (non-XLA)
    # program, so the step times differ only by the parallelism.
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        jit_compile=False,
    )


def setup(
    mode: str,
    model_name: str,
    input_spec: models.InputSpec,
    replicas: int,
    global_batch_size: int | None = None,
) -> Prepared:
    """Builds and compiles `model_name` the way `mode` runs it.

    Args:
        mode: One of `MODES`.
        model_name: A key of `models.MODELS`.
        input_spec: The model's input.
        replicas: Number of devices (or workers) to use.
        global_batch_size: Rows per step; a stateful model is built for its
            share per replica. Defaults to None.

    Returns:
        A `Prepared` model. `setup_s` is the time the mode's own set-up took:
        the `multi_gpu_model()` call for the shim, the strategy and the model
        built in its scope for `mirrored`, the placed build for
        `device_parallel`, the plain build otherwise.

    Raises:
        RuntimeError: If the mode needs a part of parallel_keras this
            installation does not have.
    """
    import parallel_keras
    from parallel_keras import devices as devices_lib

    build = functools.partial(models.build, model_name, input_spec)
    if models.MODELS[model_name].stateful:
        per_replica = global_batch_size if mode == SINGLE else global_batch_size // replicas
        build = functools.partial(build, batch_per_replica=per_replica)
    gpu_names = [f"/gpu:{index}" for index in range(replicas)]

    if mode == SINGLE:
        start = time.perf_counter()
        model = build()
        setup_s = time.perf_counter() - start
        _compile(model)
        return Prepared(model, setup_s, [_default_device()], "none")
    if mode == MIRRORED:
        import tensorflow as tf

        resolved = [devices_lib.resolve_device(name) for name in gpu_names]
        start = time.perf_counter()
        strategy = tf.distribute.MirroredStrategy(devices=resolved)
        with strategy.scope():
            model = build()
            setup_s = time.perf_counter() - start
            _compile(model)
        return Prepared(model, setup_s, resolved, _reduction(strategy))
    if mode in (MULTI_GPU_MODEL, CPU_RELOCATION):
        template = build()
        start = time.perf_counter()
        parallel = parallel_keras.multi_gpu_model(
            template, gpus=replicas, cpu_relocation=(mode == CPU_RELOCATION)
        )
        setup_s = time.perf_counter() - start
        _compile(parallel)
        return Prepared(
            parallel, setup_s, list(parallel.replica_devices), str(parallel.gradient_reduction)
        )
    if mode == DEVICE_PARALLEL:
        _require(parallel_keras, "device", "device placement")
        resolved = [devices_lib.resolve_device(name) for name in gpu_names]
        start = time.perf_counter()
        model = build(branch_devices=gpu_names)
        setup_s = time.perf_counter() - start
        _compile(model)
        return Prepared(model, setup_s, resolved, "none")
    if mode == MULTI_WORKER:
        # Runs in each worker started by `parallel-keras launch`, with
        # TF_CONFIG set: multi_gpu_model replicates across every worker.
        template = build()
        start = time.perf_counter()
        parallel = parallel_keras.multi_gpu_model(template, gpus=None)
        setup_s = time.perf_counter() - start
        _compile(parallel)
        return Prepared(parallel, setup_s, _worker_devices(), str(parallel.gradient_reduction))
    raise ValueError(f"Unknown mode. Received: mode={mode!r}. Choose from {list(MODES)}.")


def _reduction(strategy) -> str:
    from parallel_keras.data_parallel import strategies

    return str(strategies.strategy_reduction(strategy))


def _default_device() -> str:
    """Where a model outside any scope runs: GPU 0, else CPU 0."""
    import tensorflow as tf

    from parallel_keras import devices as devices_lib

    return devices_lib.resolve_device(
        "/gpu:0" if tf.config.list_physical_devices("GPU") else "/cpu:0"
    )


def _worker_devices() -> list[str]:
    """One device per worker of the `TF_CONFIG` cluster (1 device each)."""
    import tensorflow as tf

    from parallel_keras import multi_worker

    kind = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    workers = multi_worker.worker_info().num_workers
    return [f"/job:worker/replica:0/task:{index}/device:{kind}:0" for index in range(workers)]


def _require(module, name: str, feature: str) -> None:
    try:
        getattr(module, name)
    except (AttributeError, ImportError) as error:
        raise RuntimeError(
            f"This mode needs parallel_keras.{name} ({feature}), which this "
            f"installation of parallel_keras does not provide. Received: "
            f"{type(error).__name__}: {error}. Update parallel_keras, or leave "
            "this mode out of --modes."
        ) from error
