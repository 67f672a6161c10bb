# SPDX-License-Identifier: Apache-2.0
"""One model's measurements in their own process: build, warm up, time, report.

TensorFlow fixes its devices when it first uses them, so each model's
configurations get a fresh process whose first act is to simulate its
devices (every configuration sees the same layout), and are timed there side
by side, in alternating rounds. A `multi_worker` run has processes of its
own (started by `parallel-keras launch`).

Usage (the runner does this; SPEC_JSON is the dict `runner._run_one` builds):

    python -m benchmarks.suite.worker SPEC_JSON RESULT_PATH

It writes one JSON object to RESULT_PATH (under multi-worker, worker `i > 0`
writes RESULT_PATH.worker<i>) and exits 0, or prints the error and exits 1.
"""

from __future__ import annotations

import json
import os
import resource
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

# The name of the A/A control: a second instance of the reference configuration.
CONTROL = "control"


def _task_index() -> int:
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    return int(config.get("task", {}).get("index", 0))


def measure(spec: dict) -> dict:
    """Runs the measurements of one model described by `spec`; returns the raw record.

    Every configuration of `spec["runs"]` (and the A/A control, a second
    instance of `spec["control"]`) is built in this process on the same
    simulated devices, then timed in `spec["rounds"]` alternating rounds of
    `spec["steps"]` steps (A B C A B C ..., the order rotating each round),
    so that the machine's drift moves every configuration alike and each
    round of one pairs with the same round of another.
    """
    import parallel_keras

    # An entry point: TensorFlow's start-up lines would only bury a failed
    # run's error in the suite's output and JSON.
    parallel_keras.quiet_tensorflow()
    import keras
    import tensorflow as tf

    has_gpus = bool(tf.config.list_physical_devices("GPU"))
    multi_worker = any(run["mode"] == modes.MULTI_WORKER for run in spec["runs"])
    if not multi_worker and not has_gpus:
        parallel_keras.simulate_devices(spec["simulated_devices"])
    # Replicas (or workers) that share this machine's CPU cores.
    simulated = not has_gpus and (spec["simulated_devices"] > 1 or multi_worker)

    dataset_spec = datasets.DatasetSpec(**spec["dataset"])
    input_spec = models.InputSpec(**{**spec["input"], "shape": tuple(spec["input"]["shape"])})
    configurations = [(run["name"], run["mode"], run["replicas"]) for run in spec["runs"]]
    if spec.get("control"):
        reference = next(run for run in spec["runs"] if run["name"] == spec["control"])
        configurations.append((CONTROL, reference["mode"], reference["replicas"]))
    prepared, steps = {}, {}
    for name, mode, replicas in configurations:
        # The same initial weights for every configuration.
        keras.utils.set_random_seed(0)
        prepared[name] = modes.setup(
            mode, spec["model"], input_spec, replicas, spec["global_batch_size"]
        )
        dataset = datasets.make_dataset(
            spec["model"],
            dataset_spec,
            input_spec,
            spec["global_batch_size"],
            data_dir=spec.get("data_dir"),
        )
        steps[name] = timing.TrainSteps(prepared[name].model, dataset, spec["warmup_steps"])
    rounds = timing.alternating_rounds(steps, spec["rounds"], spec["steps"])
    # ru_maxrss is in KiB on Linux; every configuration shares this process.
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "runs": {
            name: {
                "round_step_medians_s": rounds[name],
                "setup_s": prepared[name].setup_s,
                "devices": list(prepared[name].devices),
                "gradient_reduction": prepared[name].gradient_reduction,
            }
            for name, _, _ in configurations
        },
        "peak_rss_mb": peak_rss_mb,
        "simulated": simulated,
        "gpus": [device.name for device in tf.config.list_physical_devices("GPU")],
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
