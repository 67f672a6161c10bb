# SPDX-License-Identifier: Apache-2.0
r"""What gradient accumulation costs per batch, on simulated devices.

Two parallel models of the same suite model on the same replicas and the
same per-replica batch: one with `gradient_accumulation_steps=k` (k=4 by
default), one without (k=1). Each first runs `fit` (which builds it and its
train function); then the train function `fit` calls once per batch runs on
each model's distributed batches in short alternating rounds (accumulating,
plain, control, in a rotating order). The ratio is the median over rounds of
accumulating / plain, each round's median step against its neighbour's
(goal: <= 1.05), with a 95% bootstrap interval; the control is a second
plain model timed the same way, to show what the machine's noise alone makes
of two identical models. A round holds a multiple of k steps, so every round
holds the same number of updates.

Run:
    python -m benchmarks accumulation --replicas=4
"""

from __future__ import annotations

import json
import statistics

from absl import flags

from benchmarks import stats, timing

_REPLICAS = flags.DEFINE_integer("replicas", 4, "Simulated devices to replicate on.")
_PER_REPLICA_BATCH = flags.DEFINE_integer("per-replica-batch", 32, "Rows per replica.")
_STEPS = flags.DEFINE_integer("steps", 4, "Accumulation steps k of the accumulating model.")
_ROUNDS = flags.DEFINE_integer("rounds", 60, "Alternating rounds per model.")
_ROUND_UPDATES = flags.DEFINE_integer("round-updates", 2, "Updates (k batches each) per round.")
_MODELS = flags.DEFINE_list(
    "models",
    ["mlp", "cnn"],
    "Suite models (benchmarks/suite/models.py) to time, at their quick input size.",
)


def _build(model_name: str, replicas: int, global_batch: int, steps: int | None):
    import keras

    import parallel_keras
    from benchmarks.suite import models

    keras.utils.set_random_seed(0)
    input_spec = models.default_input(model_name, quick=True)
    parallel = parallel_keras.multi_gpu_model(models.build(model_name, input_spec), gpus=replicas)
    parallel.compile(
        keras.optimizers.SGD(0.01, momentum=0.9, gradient_accumulation_steps=steps),
        "sparse_categorical_crossentropy",
        jit_compile=False,
    )
    return parallel, input_spec


def measure(model_name: str) -> dict:
    """k=steps against k=1 on one model, alternating rounds."""
    from benchmarks.suite import datasets

    replicas, steps = _REPLICAS.value, _STEPS.value
    global_batch = replicas * _PER_REPLICA_BATCH.value
    accumulating, input_spec = _build(model_name, replicas, global_batch, steps)
    plain, _ = _build(model_name, replicas, global_batch, None)
    control, _ = _build(model_name, replicas, global_batch, None)
    dataset = datasets.make_dataset(
        model_name, datasets.parse("synthetic"), input_spec, global_batch
    )
    runs = {
        name: timing.TrainSteps(model, dataset, warmup_steps=steps)
        for name, model in (("accumulating", accumulating), ("plain", plain), ("control", control))
    }
    rounds = timing.alternating_rounds(runs, _ROUNDS.value, steps * _ROUND_UPDATES.value)
    ratio = timing.paired_ratio(rounds["accumulating"], rounds["plain"])
    control_ratio = timing.paired_ratio(rounds["control"], rounds["plain"])
    return {
        "model": model_name,
        "replicas": replicas,
        "per_replica_batch": _PER_REPLICA_BATCH.value,
        "gradient_accumulation_steps": steps,
        "rounds": _ROUNDS.value,
        "timed_steps_per_round": steps * _ROUND_UPDATES.value,
        "accumulating_step_median_s": statistics.median(rounds["accumulating"]),
        "plain_step_median_s": statistics.median(rounds["plain"]),
        "ratio_accumulating_over_plain": ratio.median,
        "ratio_ci95": [ratio.low, ratio.high],
        "control_ratio": control_ratio.median,
        "control_ratio_ci95": [control_ratio.low, control_ratio.high],
        "verdict": stats.verdict(ratio, control_ratio, digits=3),
    }


def main(argv):
    del argv
    import parallel_keras

    parallel_keras.simulate_devices(_REPLICAS.value)
    print(
        f"Simulated CPU devices: {_REPLICAS.value}; per-replica batch "
        f"{_PER_REPLICA_BATCH.value}; gradient_accumulation_steps={_STEPS.value} "
        f"against none; {_ROUNDS.value} alternating rounds; ratio [95% interval]:"
    )
    report = []
    for model_name in _MODELS.value:
        result = measure(model_name)
        report.append(result)
        control = stats.PairedRatio(result["control_ratio"], *result["control_ratio_ci95"])
        print(
            f"  {model_name}: median step k={_STEPS.value} "
            f"{result['accumulating_step_median_s'] * 1e3:.1f} ms, k=1 "
            f"{result['plain_step_median_s'] * 1e3:.1f} ms, ratio "
            f"{result['verdict']} (goal <= 1.05); {stats.noise_line('k=1/k=1', control)}",
            flush=True,
        )
    print(json.dumps(report, indent=2))
    return 0
