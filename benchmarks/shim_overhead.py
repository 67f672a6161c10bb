r"""What the `multi_gpu_model` shim costs against native tf.distribute code.

Two measurements, each side by side in one run:

1. Step time: `multi_gpu_model(template).fit` against a hand-written
   `MirroredStrategy` scope + `fit` of the same model, in one process on
   simulated devices, alternating rounds so machine noise hits both alike.
   Reports median step times and their ratio (goal: <= 1.02).
2. Wrapping an Xception-sized template (about 23M parameters): the time
   `multi_gpu_model()` takes, and the peak RSS of "build the template, then
   wrap it" against "build the model natively inside the strategy scope",
   each in a fresh process. Memory is the peak RSS above the process's RSS
   before the build, sampled during it. Goal: under 1 s, and peak within 5%
   of the native build.

Run:
    python -m benchmarks.shim_overhead --replicas=4
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

from absl import app
from absl import flags

_REPLICAS = flags.DEFINE_integer("replicas", 4, "Simulated devices to replicate on.")
_BATCH_SIZE = flags.DEFINE_integer("batch-size", 128, "Global batch size.")
_STEPS = flags.DEFINE_integer("steps", 30, "Timed steps per round.")
_WARMUP_STEPS = flags.DEFINE_integer("warmup-steps", 5, "Untimed steps per round.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Alternating rounds per approach.")
_SKIP_XCEPTION = flags.DEFINE_bool(
    "skip-xception", False, "Skip the wrapping time / peak RSS measurement."
)
_BUILD = flags.DEFINE_enum(
    "build", None, ["native", "shim"],
    "Internal: run one Xception build in this process and print JSON.",
)


# The underscore spellings of earlier releases, hidden from --help (which
# lists only this module's flags) as in benchmarks/flag_spellings.py.
for _holder in (_REPLICAS, _BATCH_SIZE, _STEPS, _WARMUP_STEPS, _ROUNDS, _SKIP_XCEPTION, _BUILD):
    if "-" in _holder.name:
        flags.DEFINE_alias(_holder.name.replace("-", "_"), _holder.name,
                           module_name="benchmarks.flag_spellings")

def _step_model(keras):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
    x = keras.layers.Conv2D(32, 3, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def _step_times(keras, model, x, y) -> list[float]:
    times = []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self._start)

    model.fit(x, y, batch_size=_BATCH_SIZE.value, epochs=1, shuffle=False,
              verbose=0, callbacks=[Timer()])
    return times[_WARMUP_STEPS.value:]


def measure_step_time() -> dict:
    import numpy as np
    import tensorflow as tf

    import parallel_keras

    import keras

    devices = [f"/cpu:{i}" for i in range(_REPLICAS.value)]
    rows = _BATCH_SIZE.value * (_STEPS.value + _WARMUP_STEPS.value)
    rng = np.random.RandomState(0)
    x = rng.rand(rows, 32, 32, 3).astype("float32")
    y = rng.rand(rows, 10).astype("float32")

    shim = parallel_keras.multi_gpu_model(_step_model(keras), gpus=_REPLICAS.value)
    shim.compile("adam", "mse")
    strategy = tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice("/cpu:0")
    )
    with strategy.scope():
        native = _step_model(keras)
        native.compile("adam", "mse")

    shim_times, native_times = [], []
    for round_index in range(_ROUNDS.value):
        order = [(shim, shim_times), (native, native_times)]
        if round_index % 2:
            order.reverse()
        for model, sink in order:
            sink.extend(_step_times(keras, model, x, y))
        print(f"  round {round_index + 1}/{_ROUNDS.value}: "
              f"shim {statistics.median(shim_times) * 1e3:.1f} ms, "
              f"native {statistics.median(native_times) * 1e3:.1f} ms")
    shim_median = statistics.median(shim_times)
    native_median = statistics.median(native_times)
    return {
        "replicas": _REPLICAS.value,
        "global_batch_size": _BATCH_SIZE.value,
        "timed_steps_each": len(shim_times),
        "shim_step_median_s": shim_median,
        "native_step_median_s": native_median,
        "ratio_shim_over_native": shim_median / native_median,
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
        return keras.applications.Xception(
            weights=None, input_shape=(299, 299, 3), classes=1000
        )

    result = {"kind": kind}
    strategy = tf.distribute.MirroredStrategy(
        [f"/cpu:{i}" for i in range(_REPLICAS.value)]
    )
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
            [sys.executable, "-m", "benchmarks.shim_overhead", f"--build={kind}",
             f"--replicas={_REPLICAS.value}"],
            capture_output=True, text=True, check=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        runs.setdefault(kind, []).append(json.loads(process.stdout.strip().splitlines()[-1]))
        print(f"  {kind}: {runs[kind][-1]}")
    native_rss = statistics.median(r["peak_rss_increase_mb"] for r in runs["native"])
    shim_rss = statistics.median(r["peak_rss_increase_mb"] for r in runs["shim"])
    return {
        "parameters": runs["shim"][0]["parameters"],
        "multi_gpu_model_s_median": statistics.median(
            r["multi_gpu_model_s"] for r in runs["shim"]
        ),
        "native_peak_rss_mb_median": native_rss,
        "shim_peak_rss_mb_median": shim_rss,
        "rss_ratio_shim_over_native": shim_rss / native_rss,
    }


def main(argv):
    del argv
    if not _SKIP_XCEPTION.value and importlib.util.find_spec("psutil") is None:
        print('error: the peak-RSS measurement needs psutil, which is not installed. '
              'Install the benchmark extra: python3 -m pip install ".[bench]" '
              '(or pass --skip-xception).', file=sys.stderr)
        return 2
    if _BUILD.value:
        print(json.dumps(_build_once(_BUILD.value)))
        return 0
    import parallel_keras

    parallel_keras.simulate_devices(_REPLICAS.value)
    print(f"Simulated CPU devices: {_REPLICAS.value}. Step times on simulated "
          "devices measure overhead, not speedup.")
    print("Step time, shim vs hand-written MirroredStrategy:")
    report = {"step_time": measure_step_time()}
    step = report["step_time"]
    print(f"  median step: shim {step['shim_step_median_s'] * 1e3:.1f} ms, "
          f"native {step['native_step_median_s'] * 1e3:.1f} ms, "
          f"ratio {step['ratio_shim_over_native']:.3f} (goal <= 1.02)")
    if not _SKIP_XCEPTION.value:
        print("Wrapping an Xception template, each build in a fresh process:")
        report["wrapping"] = wrapping = measure_wrapping()
        print(f"  multi_gpu_model() median {wrapping['multi_gpu_model_s_median']:.2f} s "
              f"(goal < 1 s); peak RSS shim {wrapping['shim_peak_rss_mb_median']:.0f} MB "
              f"vs native {wrapping['native_peak_rss_mb_median']:.0f} MB, ratio "
              f"{wrapping['rss_ratio_shim_over_native']:.3f} (goal <= 1.05)")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    app.run(main)
