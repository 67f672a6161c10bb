# SPDX-License-Identifier: Apache-2.0
r"""What the `multi_gpu_model` shim costs against native tf.distribute code.

Two measurements, each side by side in one run:

1. Step time, for each model of `--models`: `multi_gpu_model(template)`
   against a hand-written `MirroredStrategy` scope around the same model
   with the same gradient reduction, in one process on simulated devices.
   Each model first runs `fit` (which builds it and its train function);
   then the train function `fit` calls once per step runs on each model's
   distributed batches in short alternating rounds (shim, native, control,
   in a rotating order). The ratio is the median over rounds of shim /
   native, each round's median step against its neighbour's (goal: <= 1.02),
   with a 95% bootstrap interval (`benchmarks.stats`, shared by every
   benchmark; "no difference measured" when the interval includes 1 or
   lies within the control's). The control is a second native model
   timed the same way: its ratio to the first (ideally 1.00) shows what the
   machine's noise alone makes of two identical models. Steps of a few
   milliseconds on simulated devices sharing two cores move by 10-30%
   between whole `fit` calls, which each also rebuild the input iterators;
   rounds of a few steps a few milliseconds apart cancel that drift.
   Alongside, a figure noise cannot move: the operations in one traced
   distributed train step of each model. The benchmark's batches split into
   equal slices, which the shim distributes unchanged, as `fit` does.
2. Wrapping an Xception-sized template (about 23M parameters): the time
   `multi_gpu_model()` takes, and the peak RSS of "build the template, then
   wrap it" against "build the model natively inside the strategy scope",
   each in a fresh process. Memory is the peak RSS above the process's RSS
   before the build, sampled during it. Goal: under 1 s, and peak within 5%
   of the native build.

Run:
    python -m benchmarks shim-overhead --replicas=4
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

from absl import flags

from benchmarks import flag_spellings, shim_and_native, stats, step_graph, timing

_REPLICAS = flags.DEFINE_integer("replicas", 4, "Simulated devices to replicate on.")
_BATCH_SIZE = flags.DEFINE_integer("batch-size", 128, "Global batch size.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed steps per round.")
_WARMUP_STEPS = flags.DEFINE_integer(
    "warmup-steps", 3, "Untimed steps of each model before the rounds."
)
_ROUNDS = flags.DEFINE_integer("rounds", 100, "Alternating rounds per approach.")
_MODELS = flags.DEFINE_list(
    "models",
    ["mlp", "cnn", "two_branch_lstm", "multi_output", "stateful_lstm"],
    "Suite models (benchmarks/suite/models.py) to time, at their quick input size.",
)
_SKIP_XCEPTION = flags.DEFINE_bool(
    "skip-xception", False, "Skip the wrapping time / peak RSS measurement."
)
_BUILD = flags.DEFINE_enum(
    "build",
    None,
    ["native", "shim"],
    "Internal: run one Xception build in this process and print JSON.",
)


flag_spellings.keep_old_spellings(
    _REPLICAS, _BATCH_SIZE, _STEPS, _WARMUP_STEPS, _ROUNDS, _SKIP_XCEPTION, _BUILD
)


def measure_step_time(model_name: str) -> dict:
    """Shim against native MirroredStrategy on one model, alternating rounds."""
    replicas = _REPLICAS.value
    shim, (native, control), dataset = shim_and_native.build(
        model_name, replicas, _BATCH_SIZE.value, native_copies=2
    )

    approaches = {"shim": shim, "native": native, "control": control}
    runs = {
        name: timing.TrainSteps(model, dataset, _WARMUP_STEPS.value)
        for name, model in approaches.items()
    }
    rounds = timing.alternating_rounds(runs, _ROUNDS.value, _STEPS.value)
    shim_ratio = timing.paired_ratio(rounds["shim"], rounds["native"])
    control_ratio = timing.paired_ratio(rounds["control"], rounds["native"])
    ops = {
        name: step_graph.train_step_ops(approaches[name], dataset) for name in ("shim", "native")
    }
    return {
        "model": model_name,
        "replicas": replicas,
        "global_batch_size": _BATCH_SIZE.value,
        "gradient_reduction": str(shim.gradient_reduction),
        "rounds": _ROUNDS.value,
        "timed_steps_per_round": _STEPS.value,
        "shim_step_median_s": statistics.median(rounds["shim"]),
        "native_step_median_s": statistics.median(rounds["native"]),
        "ratio_shim_over_native": shim_ratio.median,
        "ratio_shim_over_native_ci95": [shim_ratio.low, shim_ratio.high],
        "control_ratio_native_over_native": control_ratio.median,
        "control_ratio_ci95": [control_ratio.low, control_ratio.high],
        "verdict": stats.verdict(shim_ratio, control_ratio, digits=3),
        "train_step_ops_shim": ops["shim"],
        "train_step_ops_native": ops["native"],
    }


class _PeakRss:
    """Samples this process's RSS in a thread; peak above the starting RSS.

    `ru_maxrss` cannot be used: TensorFlow's start-up peak is higher than the
    model's, so it reads the same for every build.
    """

    def __init__(self, interval_s: float = 0.002):
        import threading

        import psutil

        self._process = psutil.Process()
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(self._interval_s)

    def __enter__(self):
        self.start = self.peak = self._process.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)
        self.increase_mb = (self.peak - self.start) / 2**20


def _build_once(kind: str) -> dict:
    """One Xception build in this (fresh) process, with its memory peak."""
    import tensorflow as tf

    import parallel_keras

    parallel_keras.simulate_devices(_REPLICAS.value)
    import keras

    def xception():
        return keras.applications.Xception(weights=None, input_shape=(299, 299, 3), classes=1000)

    result = {"kind": kind}
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(_REPLICAS.value)])
    with _PeakRss() as memory:
        if kind == "native":
            start = time.perf_counter()
            with strategy.scope():
                model = xception()
            result["build_s"] = time.perf_counter() - start
        else:
            start = time.perf_counter()
            with tf.device("/cpu:0"):
                model = xception()
            result["build_s"] = time.perf_counter() - start
            start = time.perf_counter()
            parallel_keras.multi_gpu_model(model, gpus=_REPLICAS.value)
            result["multi_gpu_model_s"] = time.perf_counter() - start
    result["parameters"] = model.count_params()
    result["peak_rss_increase_mb"] = memory.increase_mb
    return result


def measure_wrapping() -> dict:
    runs = {}
    for kind in ("native", "shim", "native", "shim"):
        process = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks",
                "shim-overhead",
                f"--build={kind}",
                f"--replicas={_REPLICAS.value}",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        runs.setdefault(kind, []).append(json.loads(process.stdout.strip().splitlines()[-1]))
        print(f"  {kind}: {runs[kind][-1]}")
    native_rss = statistics.median(r["peak_rss_increase_mb"] for r in runs["native"])
    shim_rss = statistics.median(r["peak_rss_increase_mb"] for r in runs["shim"])
    return {
        "parameters": runs["shim"][0]["parameters"],
        "multi_gpu_model_s_median": statistics.median(r["multi_gpu_model_s"] for r in runs["shim"]),
        "native_peak_rss_mb_median": native_rss,
        "shim_peak_rss_mb_median": shim_rss,
        "rss_ratio_shim_over_native": shim_rss / native_rss,
    }


def main(argv):
    del argv
    if not _SKIP_XCEPTION.value and importlib.util.find_spec("psutil") is None:
        print(
            "error: the peak-RSS measurement needs psutil, which is not installed. "
            'Install the benchmark extra: python3 -m pip install ".[bench]" '
            "(or pass --skip-xception).",
            file=sys.stderr,
        )
        return 2
    if _BUILD.value:
        print(json.dumps(_build_once(_BUILD.value)))
        return 0
    import parallel_keras

    parallel_keras.simulate_devices(_REPLICAS.value)
    print(
        f"Simulated CPU devices: {_REPLICAS.value}. Step times on simulated "
        "devices measure overhead, not speedup."
    )
    print(
        "Step time, shim vs hand-written MirroredStrategy (same reduction), "
        f"{_ROUNDS.value} alternating rounds of {_STEPS.value} steps; ratio "
        "[95% interval]:"
    )
    report = {"step_time": []}
    for model_name in _MODELS.value:
        step = measure_step_time(model_name)
        step["control"] = stats.PairedRatio(
            step["control_ratio_native_over_native"], *step["control_ratio_ci95"]
        )
        report["step_time"].append({k: v for k, v in step.items() if k != "control"})
        print(
            f"  {model_name}: median step shim {step['shim_step_median_s'] * 1e3:.1f} ms, "
            f"native {step['native_step_median_s'] * 1e3:.1f} ms, "
            f"ratio {step['verdict']} (goal <= 1.02); "
            f"{stats.noise_line('native/native', step['control'])}; ops per train step shim "
            f"{step['train_step_ops_shim']}, native {step['train_step_ops_native']}",
            flush=True,
        )
    if not _SKIP_XCEPTION.value:
        print("Wrapping an Xception template, each build in a fresh process:")
        report["wrapping"] = wrapping = measure_wrapping()
        print(
            f"  multi_gpu_model() median {wrapping['multi_gpu_model_s_median']:.2f} s "
            f"(goal < 1 s); peak RSS shim {wrapping['shim_peak_rss_mb_median']:.0f} MB "
            f"vs native {wrapping['native_peak_rss_mb_median']:.0f} MB, ratio "
            f"{wrapping['rss_ratio_shim_over_native']:.3f} (goal <= 1.05)"
        )
    print(json.dumps(report, indent=2))
    return 0
