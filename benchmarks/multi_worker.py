# SPDX-License-Identifier: Apache-2.0
"""Benchmark: one process x 2 devices, 2 workers x 1 and 2 workers x 2.

Same model, same data, same global batch, side by side in one run. The
multi-worker runs go through `parallel-keras launch` (MultiWorkerMirrored-
Strategy, gRPC over 127.0.0.1); the single-process run replicates on 2
simulated CPU devices with MirroredStrategy and an all-reduce among the
replicas (`cpu_merge=False`). All run the same legacy `multi_gpu_model` code
path.

To see what dominates the multi-worker overhead, each run also times, with
the same strategy and outside Keras, one all-reduce of a tensor the size of
the gradients (what a step must exchange) and one all-reduce of a scalar
(the fixed cost of a collective, paid for the loss and metrics too).

Bytes all-reduced per step: every step all-reduces one gradient per trainable
variable (float32) plus a few scalars (loss, metric and row counts); the
figure below counts the gradients from the model's trainable variables, and
compares them with the size of all of the model's weights.

Usage:

    python -m benchmarks multi-worker --steps 40 --width 512
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from absl import flags

from benchmarks import flag_spellings

_ROLE = flags.DEFINE_enum(
    "role", "driver", ["driver", "worker", "mirrored"], "Internal: what this process runs."
)
_STEPS = flags.DEFINE_integer("steps", 40, "Timed training steps.")
_WARMUP = flags.DEFINE_integer("warmup", 5, "Untimed steps first (tracing).")
_GLOBAL_BATCH = flags.DEFINE_integer("global-batch", 64, "Global batch size.")
_WIDTH = flags.DEFINE_integer("width", 512, "Hidden layer width of the MLP.")
_THREADS = flags.DEFINE_integer(
    "threads-per-worker",
    0,
    "Intra- and inter-op threads of each worker process (0: TensorFlow's "
    "default, one per core in every process).",
)

flag_spellings.keep_old_spellings(_GLOBAL_BATCH, _THREADS)

_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The workers run this benchmark as a script file, through its command.
_BENCHMARKS_MAIN = os.path.join(_REPO_ROOT, "benchmarks", "__main__.py")


def _train_and_time(gpus):
    if _THREADS.value:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(_THREADS.value)
        tf.config.threading.set_inter_op_parallelism_threads(_THREADS.value)
    import keras
    import numpy as np

    import parallel_keras

    keras.utils.set_random_seed(0)
    width = _WIDTH.value
    template = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus, cpu_merge=False)
    parallel.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    batch = _GLOBAL_BATCH.value
    rows = batch * (_WARMUP.value + _STEPS.value)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 64)).astype("float32")
    y = rng.normal(size=(rows, 10)).astype("float32")
    warm = batch * _WARMUP.value
    parallel.fit(x[:warm], y[:warm], batch_size=batch, epochs=1, shuffle=False, verbose=0)
    started = time.perf_counter()
    parallel.fit(x[warm:], y[warm:], batch_size=batch, epochs=1, shuffle=False, verbose=0)
    step_seconds = (time.perf_counter() - started) / _STEPS.value

    def nbytes(variables):
        return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables)

    gradient_bytes = nbytes(template.trainable_variables)
    model_bytes = nbytes(template.variables)
    collectives = _collectives_per_step()
    gradient_ms = _all_reduce_ms(parallel.strategy, gradient_bytes // 4)
    scalar_ms = _all_reduce_ms(parallel.strategy, 1)
    print(
        "BENCH "
        + json.dumps(
            {
                "step_ms": 1000 * step_seconds,
                "gradient_all_reduce_ms": gradient_ms,
                "collectives_per_step": collectives,
                "scalar_all_reduce_ms": scalar_ms,
                "replicas": parallel.strategy.num_replicas_in_sync,
                "strategy": type(parallel.strategy).__name__,
                "gradient_bytes": gradient_bytes,
                "model_bytes": model_bytes,
                "params": template.count_params(),
            }
        ),
        flush=True,
    )


def _collectives_per_step():
    """Collective all-reduce ops in the traced training step, by op type."""
    from parallel_keras import _internals

    return _internals.collective_reductions_in_traced_function("one_step_on_data")


def _all_reduce_ms(strategy, elements, repeats=20):
    """Milliseconds of one SUM all-reduce of `elements` float32 values."""
    import tensorflow as tf

    @tf.function
    def all_reduce():
        def replica_fn():
            value = tf.ones([elements], tf.float32)
            return tf.distribute.get_replica_context().all_reduce("SUM", value)

        return strategy.run(replica_fn)

    all_reduce()  # Trace and warm up.
    started = time.perf_counter()
    for _ in range(repeats):
        result = all_reduce()
    strategy.experimental_local_results(result)[0].numpy()
    return 1000 * (time.perf_counter() - started) / repeats


def _run(command):
    env = dict(os.environ, **_ENV)
    process = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=900, cwd=_REPO_ROOT
    )
    found = re.findall(r"BENCH (\{.*\})", process.stdout)
    if process.returncode != 0 or not found:
        raise RuntimeError(
            f"Benchmark run failed: {' '.join(command)}\n{process.stdout[-3000:]}\n"
            f"{process.stderr[-3000:]}"
        )
    return [json.loads(text) for text in found]


def main(argv):
    del argv
    if _ROLE.value == "worker":
        _train_and_time(gpus=None)
        return
    if _ROLE.value == "mirrored":
        import parallel_keras

        parallel_keras.simulate_devices(2)
        _train_and_time(gpus=2)
        return
    common = [
        f"--steps={_STEPS.value}",
        f"--warmup={_WARMUP.value}",
        f"--global-batch={_GLOBAL_BATCH.value}",
        f"--width={_WIDTH.value}",
    ]
    worker_flags = [f"--threads-per-worker={_THREADS.value}"]
    mirrored = _run(
        [sys.executable, "-m", "benchmarks", "multi-worker", "--role=mirrored", *common]
    )[0]
    launcher = (
        "import sys; from parallel_keras.cli import main; "
        "main.SUBCOMMANDS = {'launch': 'parallel_keras.cli.launch'}; main.run()"
    )
    runs = [("1 process x 2 simulated devices (Mirrored)", [mirrored])]
    for devices in (1, 2):
        workers = _run(
            [
                sys.executable,
                "-c",
                launcher,
                "launch",
                "--workers",
                "2",
                "--devices-per-worker",
                str(devices),
                _BENCHMARKS_MAIN,
                "multi-worker",
                "--role=worker",
                *common,
                *worker_flags,
            ]
        )
        runs.append((f"2 workers x {devices} device(s) (MultiWorkerMirrored)", workers))
    print(f"model: MLP 64-{_WIDTH.value}-{_WIDTH.value}-10, {mirrored['params']:,} params")
    print(
        f"global batch {_GLOBAL_BATCH.value}, {_STEPS.value} timed steps after "
        f"{_WARMUP.value} warm-up; bytes all-reduced per step (gradients, float32): "
        f"{mirrored['gradient_bytes']:,}"
    )
    header = (
        f"{'setup':46s} {'replicas':>8s} {'step ms':>8s} {'steps/s':>8s} "
        f"{'vs 1 proc':>9s} {'grad all-reduce ms':>18s} {'scalar all-reduce ms':>20s} "
        "collectives/step"
    )
    print(header)
    for name, results in runs:
        slowest = max(results, key=lambda result: result["step_ms"])
        print(
            f"{name:46s} {slowest['replicas']:8d} {slowest['step_ms']:8.2f} "
            f"{1000 / slowest['step_ms']:8.1f} "
            f"{slowest['step_ms'] / mirrored['step_ms']:8.2f}x "
            f"{slowest['gradient_all_reduce_ms']:18.2f} "
            f"{slowest['scalar_all_reduce_ms']:20.2f} "
            f"{sum(slowest['collectives_per_step'].values())} "
            f"{slowest['collectives_per_step']}"
        )
