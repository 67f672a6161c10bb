# SPDX-License-Identifier: Apache-2.0
"""Benchmark: the legacy tutorials' two-branch model placed on 2 devices vs no placement.

The model is the legacy tutorials' device-parallel example (a shared LSTM encoding two
sequences, merged on the CPU, then a softmax layer), built twice with the
same weights: once with each branch inside `parallel_keras.device('/gpu:i')`
and the merge inside `parallel_keras.device('/cpu:0')`, once with no
placement. It reports the median training step time of each and their
ratio, and, for the placed model, how many ops of one eager call ran on each
device and how many ops of the traced train step are pinned to each device.

On a machine without GPUs, `/gpu:i` is simulated CPU device i: all devices
share the same CPU cores, so the step-time ratio measures the overhead of
placement, not a speedup.

Example:

    python -m benchmarks device-parallel --steps=30 --batch-size=32
"""

from __future__ import annotations

import statistics

from absl import flags

from benchmarks import flag_spellings, timing

_STEPS = flags.DEFINE_integer("steps", 30, "Timed training steps per model.")
_WARMUP = flags.DEFINE_integer("warmup", 3, "Untimed steps first (tracing).")
_BATCH_SIZE = flags.DEFINE_integer("batch-size", 32, "Batch size.")
_TIMESTEPS = flags.DEFINE_integer(
    "timesteps", 140, "Sequence length (the legacy Keras 2 guides: 140)."
)
_FEATURES = flags.DEFINE_integer(
    "features", 64, "Features per step (the legacy Keras 2 guides: 256)."
)
_UNITS = flags.DEFINE_integer("units", 64, "LSTM units (the legacy Keras 2 guides: 64).")
_REPEATS = flags.DEFINE_integer(
    "repeats", 3, "Alternating rounds of both models; the medians pool all rounds."
)


flag_spellings.keep_old_spellings(
    _STEPS, _WARMUP, _BATCH_SIZE, _TIMESTEPS, _FEATURES, _UNITS, _REPEATS
)


def build(place: bool):
    """The legacy tutorials' model; with `place`, branches on /gpu:0 and /gpu:1."""
    import contextlib

    import keras

    import parallel_keras

    keras.utils.set_random_seed(0)
    scope = parallel_keras.device if place else (lambda name: contextlib.nullcontext())
    shape = (_TIMESTEPS.value, _FEATURES.value)
    input_a = keras.Input(shape=shape)
    input_b = keras.Input(shape=shape)
    shared_lstm = keras.layers.LSTM(_UNITS.value)
    with scope("/gpu:0"):
        encoded_a = shared_lstm(input_a)
    with scope("/gpu:1"):
        encoded_b = shared_lstm(input_b)
    with scope("/cpu:0"):
        merged_vector = keras.layers.concatenate([encoded_a, encoded_b], axis=-1)
    fc1 = keras.layers.Dense(50, activation="softmax")(merged_vector)
    model = keras.Model(inputs=[input_a, input_b], outputs=fc1)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    return model


def step_times(model, x, y, steps: int) -> list[float]:
    clock = timing.StepClock()
    for _ in range(steps):
        clock.start()
        clock.stop(model.train_on_batch(x, y))
    return clock.times


def main(argv):
    del argv
    import parallel_keras

    parallel_keras.simulate_devices(2)
    import keras
    import numpy as np

    from parallel_keras.testing import record_op_devices

    rng = np.random.default_rng(0)
    shape = (_BATCH_SIZE.value, _TIMESTEPS.value, _FEATURES.value)
    x = [rng.random(shape, dtype=np.float32) for _ in range(2)]
    y = keras.utils.to_categorical(rng.integers(0, 50, _BATCH_SIZE.value), 50)

    placed, unplaced = build(place=True), build(place=False)
    with record_op_devices() as eager_ops:
        placed(x)
    with record_op_devices() as traced_ops:
        step_times(placed, x, y, _WARMUP.value)  # Traces the train step.
    step_times(unplaced, x, y, _WARMUP.value)
    timings = {"placed": [], "unplaced": []}
    for _ in range(_REPEATS.value):  # Alternate to share load drift fairly.
        timings["placed"] += step_times(placed, x, y, _STEPS.value)
        timings["unplaced"] += step_times(unplaced, x, y, _STEPS.value)
    median_ms = {name: 1000 * statistics.median(t) for name, t in timings.items()}

    print(
        f"model: legacy tutorials' two-branch shared LSTM, inputs 2 x {shape}, "
        f"LSTM({_UNITS.value}), Dense(50); {placed.count_params():,} params"
    )
    print(
        f"{_REPEATS.value} x {_STEPS.value} timed train steps per model after "
        f"{_WARMUP.value} warm-up"
    )
    print(f"{'model':36s} {'median step ms':>15s}")
    print(f"{'no placement':36s} {median_ms['unplaced']:15.2f}")
    print(f"{'branches on /gpu:0, /gpu:1; merge cpu':36s} {median_ms['placed']:15.2f}")
    print(f"step time ratio placed / unplaced: {median_ms['placed'] / median_ms['unplaced']:.3f}")
    print("ops per device, placed model:")
    eager = eager_ops.device_counts(traced=False)
    traced = traced_ops.device_counts(traced=True)
    for device in sorted(set(eager) | set(traced), key=str):
        label = device or "unpinned (placer decides)"
        print(
            f"  {label:28s} eager call: {eager.get(device, 0):6d}   traced train step: {traced.get(device, 0):6d}"
        )
    if parallel_keras.devices.gpus_are_simulated():
        print(
            "NOTE: no GPU here: /gpu:i ran on simulated CPU device i, and all "
            "simulated devices share the same CPU cores. This is NOT a speedup "
            "measure; the ratio shows the cost of placement on CPU simulation "
            "and the op counts show the placement took effect."
        )
