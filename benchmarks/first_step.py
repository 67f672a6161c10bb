# SPDX-License-Identifier: Apache-2.0
r"""How long a deep model waits for its first train step, shim against native.

A deep model's first step is mostly tracing: Keras traces the train step
(each replica's forward and backward pass, then the optimizer's update of
every variable under `merge_call`) before it runs once. This benchmark
times, for a synthetic deep residual model (`--blocks` blocks of two small
convolutions, tiny images, Adam, `fit` on numpy arrays):

* `shim`: `multi_gpu_model(template, gpus=--replicas)`;
* `native`: the same model built in a hand-written `MirroredStrategy` scope
  over the same simulated devices;
* `one_device`: the same model on one device;

each in a fresh process (tracing caches nothing across processes, and a
user's first `fit` starts in one), interleaved round by round in a rotating
order so that a busy machine slows every approach alike. Reported for each:
the seconds from calling `fit` to the end of step 1 (trace + run), of
step 2 (the traced step, run), the median over rounds with its 95%
interval, and the round-by-round ratios shim / native and native / one
device (`benchmarks.stats`). `--control` adds a second native process per
round, an A/A control showing what noise alone makes of the ratio.

Beside the times, a figure noise cannot move: how many times the first
`fit` traced the step on each replica (a layer of the model counts its
traced calls). 1 is the goal; a variable created inside the first trace of
a `tf.function` makes TensorFlow trace it again (issue 28: the shim's
replica seed counter did, doubling a deep model's wait).

Run:
    python -m benchmarks first-step --blocks=24 --rounds=3
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from absl import flags

from benchmarks import stats

_REPLICAS = flags.DEFINE_integer("replicas", 4, "Simulated devices to replicate on.")
_BLOCKS = flags.DEFINE_integer("blocks", 24, "Residual blocks of the synthetic model.")
_WIDTH = flags.DEFINE_integer("width", 8, "Channels of each convolution.")
_IMAGE_SIZE = flags.DEFINE_integer("image-size", 16, "Height and width of the images.")
_BATCH_SIZE = flags.DEFINE_integer("batch-size", 8, "Global batch size.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Rounds; each round runs every approach once.")
_CONTROL = flags.DEFINE_bool("control", False, "Add an A/A control: native twice per round.")
# `--output` is also `benchmarks.startup`'s: one process that imports both
# (the tests) keeps one definition instead of failing with DuplicateFlagError.
_OUTPUT = flags.DEFINE_string(
    "output", None, "Also write the results to this JSON file.", allow_override=True
)
_WORKER = flags.DEFINE_enum(
    "worker",
    None,
    ["shim", "native", "one_device"],
    "Internal: time one approach in this process and print JSON.",
)

APPROACHES = ("shim", "native", "one_device")
CONTROL = "native (A/A control)"
_RESULT_TAG = "FIRST_STEP_RESULT "


def _deep_model(keras, counter):
    """`--blocks` residual blocks of two 3x3 convolutions, `counter` first."""
    keras.utils.set_random_seed(0)
    size, width = _IMAGE_SIZE.value, _WIDTH.value
    inputs = keras.Input((size, size, 3))
    x = keras.layers.Conv2D(width, 3, padding="same")(counter(inputs))
    for _ in range(_BLOCKS.value):
        y = keras.layers.Conv2D(width, 3, padding="same", activation="relu")(x)
        y = keras.layers.Conv2D(width, 3, padding="same")(y)
        x = keras.layers.Add()([x, y])
    return keras.Model(inputs, keras.layers.Conv2D(3, 3, padding="same")(x))


def run_worker(approach: str) -> dict:
    """Builds, compiles and fits one approach's model for 2 steps; its times."""
    import numpy as np

    import parallel_keras

    replicas = _REPLICAS.value
    parallel_keras.simulate_devices(replicas)
    import keras
    import tensorflow as tf

    class CountsReplicaTraces(keras.layers.Layer):
        """The identity; counts its calls traced for training on the first
        replica (symbolic builds call it with `training=False`)."""

        traces = 0

        def call(self, inputs, training=None):
            context = tf.distribute.get_replica_context()
            if training and tf.inside_function() and context is not None:
                if tf.get_static_value(context.replica_id_in_sync_group) == 0:
                    type(self).traces += 1
            return inputs

    class StepEnds(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends: list[float] = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

    counter = CountsReplicaTraces()
    started = time.perf_counter()
    if approach == "shim":
        model = parallel_keras.multi_gpu_model(_deep_model(keras, counter), gpus=replicas)
        model.compile(keras.optimizers.Adam(1e-3), "mae")
    elif approach == "native":
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
        with strategy.scope():
            model = _deep_model(keras, counter)
            model.compile(keras.optimizers.Adam(1e-3), "mae")
    else:
        with tf.device("/cpu:0"):
            model = _deep_model(keras, counter)
            model.compile(keras.optimizers.Adam(1e-3), "mae")
    built = time.perf_counter()
    rng = np.random.default_rng(0)
    shape = (2 * _BATCH_SIZE.value, _IMAGE_SIZE.value, _IMAGE_SIZE.value, 3)
    x = rng.random(shape, dtype=np.float32)
    y = rng.random(shape, dtype=np.float32)
    steps = StepEnds()
    fit_called = time.perf_counter()
    model.fit(x, y, batch_size=_BATCH_SIZE.value, shuffle=False, verbose=0, callbacks=[steps])
    return {
        "approach": approach,
        "build_and_compile_s": built - started,
        "first_step_s": steps.ends[0] - fit_called,
        "second_step_s": steps.ends[1] - steps.ends[0],
        "traces_of_the_step": CountsReplicaTraces.traces,
        "parameters": model.count_params(),
    }


def _run_once(approach: str) -> dict:
    """One approach in a fresh process."""
    argv = [
        sys.executable,
        "-m",
        "benchmarks",
        "first-step",
        f"--worker={approach}",
        f"--replicas={_REPLICAS.value}",
        f"--blocks={_BLOCKS.value}",
        f"--width={_WIDTH.value}",
        f"--image-size={_IMAGE_SIZE.value}",
        f"--batch-size={_BATCH_SIZE.value}",
    ]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    process = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    for line in process.stdout.splitlines():
        if line.startswith(_RESULT_TAG):
            return json.loads(line[len(_RESULT_TAG) :])
    raise RuntimeError(
        f"The {approach} worker exited with {process.returncode} and no result: "
        f"{process.stderr[-2000:]}"
    )


def measure(rounds: int, control: bool) -> dict[str, list[dict]]:
    """Each approach's results over `rounds` rounds, the order rotating."""
    labels = [*APPROACHES, CONTROL] if control else list(APPROACHES)
    results: dict[str, list[dict]] = {label: [] for label in labels}
    for round_index in range(rounds):
        shift = round_index % len(labels)
        for label in labels[shift:] + labels[:shift]:
            approach = "native" if label == CONTROL else label
            results[label].append(_run_once(approach))
            print(
                f"round {round_index + 1}/{rounds} {label}: first step "
                f"{results[label][-1]['first_step_s']:.1f} s",
                flush=True,
            )
    return results


def report(results: dict[str, list[dict]]) -> str:
    """The table: medians, ratios to native, traces per replica."""

    def seconds(label, key):
        return [result[key] for result in results[label]]

    control = (
        stats.paired_ratio(seconds(CONTROL, "first_step_s"), seconds("native", "first_step_s"))
        if CONTROL in results
        else None
    )
    lines = [
        f"{'approach':<22} {'first step s [95%]':>22} {'x native [95%]':>22} "
        f"{'second step s':>14} {'traces':>7}"
    ]
    for label in results:
        first = stats.median_interval(seconds(label, "first_step_s"))
        if label == "native":
            relative = "reference"
        else:
            relative = stats.verdict(
                stats.paired_ratio(
                    seconds(label, "first_step_s"), seconds("native", "first_step_s")
                ),
                None if label == CONTROL else control,
            )
        second = stats.median_interval(seconds(label, "second_step_s")).median
        traces = sorted({result["traces_of_the_step"] for result in results[label]})
        lines.append(
            f"{label:<22} {first.median:>8.1f} [{first.low:.1f}, {first.high:.1f}]"
            f"{'':>4} {relative:>22} {second:>14.3f} {','.join(map(str, traces)):>7}"
        )
    if control is not None:
        lines.append(stats.noise_line(CONTROL, control))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        from absl import app

        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if _WORKER.value:
        print(_RESULT_TAG + json.dumps(run_worker(_WORKER.value)), flush=True)
        return 0
    results = measure(_ROUNDS.value, _CONTROL.value)
    print(
        f"Time to the end of the first train step, {_BLOCKS.value} residual blocks, "
        f"{_REPLICAS.value} replicas, medians of {_ROUNDS.value} rounds "
        "(each approach a fresh process):"
    )
    print(report(results))
    if _OUTPUT.value:
        settings = {
            "replicas": _REPLICAS.value,
            "blocks": _BLOCKS.value,
            "width": _WIDTH.value,
            "image_size": _IMAGE_SIZE.value,
            "batch_size": _BATCH_SIZE.value,
            "rounds": _ROUNDS.value,
        }
        with open(_OUTPUT.value, "w") as file:
            json.dump({"settings": settings, "results": results}, file, indent=2)
        print(f"JSON: {_OUTPUT.value}")
    return 0
