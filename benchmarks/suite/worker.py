# SPDX-License-Identifier: Apache-2.0
"""One measurement in its own process: build, warm up, time, report.

TensorFlow fixes its devices when it first uses them, so each
(model, mode, replicas) run gets a fresh process whose first act is to
simulate its devices; a fresh process also makes the peak RSS that run's own.

Usage (the runner does this; SPEC_JSON is the dict `runner._run_one` builds):

    python -m benchmarks.suite.worker SPEC_JSON RESULT_PATH

It writes one JSON object to RESULT_PATH (under multi-worker, worker `i > 0`
writes RESULT_PATH.worker<i>) and exits 0, or prints the error and exits 1.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys

if __package__ in (None, ""):
    # Started as a file (e.g. by `parallel-keras launch`), not with -m.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import timing  # noqa: E402
from benchmarks.suite import (
    datasets,  # noqa: E402
    models,  # noqa: E402
    modes,  # noqa: E402
)


def _task_index() -> int:
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    return int(config.get("task", {}).get("index", 0))


def percentile(values: list[float], fraction: float) -> float:
    """The `fraction` quantile of `values`, by linear interpolation."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def measure(spec: dict) -> dict:
    """Runs one measurement described by `spec`; returns the raw record."""
    import parallel_keras

    # An entry point: TensorFlow's start-up lines would only bury a failed
    # run's error in the suite's output and JSON.
    parallel_keras.quiet_tensorflow()
    import keras
    import tensorflow as tf

    has_gpus = bool(tf.config.list_physical_devices("GPU"))
    if spec["mode"] != modes.MULTI_WORKER and not has_gpus:
        parallel_keras.simulate_devices(spec["simulated_devices"])
    # Replicas (or workers) that share this machine's CPU cores.
    simulated = not has_gpus and (
        spec["simulated_devices"] > 1 or spec["mode"] == modes.MULTI_WORKER
    )
    keras.utils.set_random_seed(0)

    dataset_spec = datasets.DatasetSpec(**spec["dataset"])
    input_spec = models.InputSpec(**{**spec["input"], "shape": tuple(spec["input"]["shape"])})
    prepared = modes.setup(
        spec["mode"], spec["model"], input_spec, spec["replicas"], spec["global_batch_size"]
    )
    dataset = datasets.make_dataset(
        spec["model"],
        dataset_spec,
        input_spec,
        spec["global_batch_size"],
        data_dir=spec.get("data_dir"),
    )

    warmup, steps = spec["warmup_steps"], spec["steps"]
    history, step_times = timing.timed_fit(
        prepared.model,
        dataset,
        epochs=1,
        steps_per_epoch=warmup + steps,
        verbose=0,
    )
    timed = step_times[warmup:]
    if len(timed) != steps:
        raise RuntimeError(
            f"Expected {steps} timed steps after {warmup} warm-up steps. "
            f"Received: {len(step_times)} steps in total."
        )
    losses = history.history.get("loss", [float("nan")])
    # ru_maxrss is in KiB on Linux.
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "step_time_median_s": statistics.median(timed),
        "step_time_p90_s": percentile(timed, 0.9),
        # From the median step, not the mean: on a shared machine a few steps
        # stalled by other processes would otherwise decide the figure.
        "samples_per_s": spec["global_batch_size"] / statistics.median(timed),
        "step_time_mean_s": statistics.fmean(timed),
        "setup_s": prepared.setup_s,
        "peak_rss_mb": peak_rss_mb,
        "devices": list(prepared.devices),
        "gradient_reduction": prepared.gradient_reduction,
        "simulated": simulated,
        "gpus": [device.name for device in tf.config.list_physical_devices("GPU")],
        "final_loss": float(losses[-1]),
        "tf_version": tf.__version__,
        "keras_version": keras.__version__,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.loads(argv[1])
    result_path = argv[2]
    index = _task_index()
    if index:
        result_path = f"{result_path}.worker{index}"
    try:
        record = measure(spec)
    except Exception as error:  # noqa: BLE001  (any failure is reported to the parent, which keeps going)
        record = {"error": f"{type(error).__name__}: {error}"}
        print(record["error"], file=sys.stderr)
        _write(result_path, record)
        return 1
    _write(result_path, record)
    return 0


def _write(path: str, record: dict) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w") as stream:
        json.dump(record, stream)
    os.replace(temporary, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
