# SPDX-License-Identifier: Apache-2.0
"""Runs the plan: one process per measurement, progress with an ETA.

The parent never starts TensorFlow for a synthetic-data run: it plans, starts
`benchmarks.suite.worker` processes (through `parallel-keras launch` for
`multi_worker`), collects their records, and derives the relative figures.
A run that fails or times out is recorded with its error and the suite goes
on, so one broken mode does not cost the other measurements.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks.suite import config as config_lib
from benchmarks.suite import datasets, modes
from benchmarks.suite import results as results_lib
from benchmarks.suite.results import RunSpec

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def run_suite(
    config: config_lib.SuiteConfig = config_lib.QUICK,
    *,
    echo: Callable[[str], None] | None = print,
) -> results_lib.SuiteResults:
    """Runs every measurement of `config` and returns the results.

    Args:
        config: What to measure. Defaults to the `--quick` preset.
        echo: Called with each progress line; None for silence. Defaults to
            `print`.

    Returns:
        A `SuiteResults`; its repr is the results table.

    Raises:
        ValueError: If `--dataset` names TFDS data that is not on disk.

    Example:

    >>> from benchmarks.suite import QUICK, run_suite
    >>> results = run_suite(QUICK.replace(models=("mlp",), steps=3))  # doctest: +SKIP
    """
    say = echo or (lambda line: None)
    dataset_spec = datasets.parse(config.dataset)
    datasets.check_available(dataset_spec, config.data_dir)
    runs, skipped = config_lib.plan(config)
    say(
        f"Benchmark suite: {len(runs)} runs ({len(skipped)} combinations "
        f"skipped), {os.cpu_count()} CPUs, global batch "
        f"{config.global_batch_size}, {config.warmup_steps}+{config.steps} "
        f"steps, data {dataset_spec}."
    )
    records: list[dict[str, Any]] = []
    durations: dict[str, list[float]] = {}
    started = time.monotonic()
    for number, spec in enumerate(runs, 1):
        run_started = time.monotonic()
        record = _run_one(spec, config, dataset_spec)
        seconds = time.monotonic() - run_started
        durations.setdefault(spec.model, []).append(seconds)
        records.append(record)
        eta = _eta(runs[number:], durations)
        say(
            f"[{number}/{len(runs)}] {str(spec):<36} {_summary(record)}  "
            f"({seconds:.0f}s, elapsed {_clock(time.monotonic() - started)}, "
            f"ETA {_clock(eta)})"
        )
    results_lib.derive(records)
    ok = [record for record in records if record["status"] == "ok"]
    simulated = any(record.get("simulated") for record in ok)
    gpus = next((record["gpus"] for record in ok if record.get("gpus")), [])
    header = {
        "machine": results_lib.machine_info(gpus),
        "devices_simulated": simulated,
        "note": results_lib.SIMULATED_NOTE if simulated else "",
        "config": {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(config).items()
        },
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tf_version": ok[0]["tf_version"] if ok else None,
        "keras_version": ok[0]["keras_version"] if ok else None,
        "elapsed_s": round(time.monotonic() - started, 1),
        # oneDNN changes CPU kernels (and their speed) a lot; note the setting.
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
    }
    return results_lib.SuiteResults(header, records, skipped)


def _summary(record: dict[str, Any]) -> str:
    if record["status"] != "ok":
        return f"FAILED: {record['error'].splitlines()[-1][:100]}"
    return (
        f"{record['samples_per_s']:8.1f} samples/s, step "
        f"{record['step_time_median_s'] * 1000:.1f} ms"
    )


def _eta(remaining: list[RunSpec], durations: dict[str, list[float]]) -> float:
    """Seconds left: each remaining run costs what its model's runs cost."""
    every = [seconds for values in durations.values() for seconds in values]
    overall = statistics.mean(every) if every else 0.0
    return sum(
        statistics.mean(durations[spec.model]) if spec.model in durations else overall
        for spec in remaining
    )


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s"


def _run_one(
    spec: RunSpec, config: config_lib.SuiteConfig, dataset_spec: datasets.DatasetSpec
) -> dict[str, Any]:
    input_spec = datasets.input_spec_for(spec.model, dataset_spec, config.data_dir, config.quick)
    payload = {
        "model": spec.model,
        "mode": spec.mode,
        "replicas": spec.replicas,
        "global_batch_size": config.global_batch_size,
        "steps": config.steps,
        "warmup_steps": config.warmup_steps,
        "dataset": dataclasses.asdict(dataset_spec),
        "data_dir": config.data_dir,
        "input": dataclasses.asdict(input_spec),
        "simulated_devices": config.simulated_devices,
    }
    record: dict[str, Any] = {key: None for key in results_lib.RUN_KEYS}
    record.update(
        model=spec.model,
        mode=spec.mode,
        replicas=spec.replicas,
        global_batch_size=config.global_batch_size,
        steps=config.steps,
        warmup_steps=config.warmup_steps,
        dataset=str(dataset_spec),
        input_shape=list(input_spec.shape),
        status="ok",
        error=None,
    )
    with tempfile.TemporaryDirectory(prefix="pk_bench_") as folder:
        result_path = os.path.join(folder, "result.json")
        command = _command(spec, json.dumps(payload), result_path)
        returncode, output = _execute(command, config.run_timeout_s)
        measured = _read(result_path)
        worker_records = [
            _read(os.path.join(folder, name))
            for name in sorted(os.listdir(folder))
            if name.startswith("result.json.worker")
        ]
    if measured is None or "error" in measured or returncode != 0:
        reason = (
            (measured or {}).get("error")
            or _tail(output)
            or (f"the measuring process exited with {returncode} and wrote no result")
        )
        record.update(status="error", error=reason)
        return record
    record.update(measured)
    if worker_records:
        # Every worker has its own process; report the largest.
        record["peak_rss_mb"] = max(
            [record["peak_rss_mb"]] + [worker.get("peak_rss_mb") or 0 for worker in worker_records]
        )
    return record


def _command(spec: RunSpec, payload: str, result_path: str) -> list[str]:
    if spec.mode == modes.MULTI_WORKER:
        return [
            sys.executable,
            "-c",
            "from parallel_keras.cli.main import run; run()",
            "launch",
            "--workers",
            str(spec.replicas),
            _WORKER_FILE,
            payload,
            result_path,
        ]
    return [sys.executable, "-m", "benchmarks.suite.worker", payload, result_path]


def _execute(command: list[str], timeout_s: float) -> tuple[int, str]:
    """Runs `command` in its own process group; kills the group on timeout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [_REPO_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    process = subprocess.Popen(
        command,
        cwd=_REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return -1, (output or "") + f"\nTimed out after {timeout_s:g}s (run_timeout_s)."
    except BaseException:
        # Interrupted (Ctrl-C, a notebook's stop button): leave no process behind.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return process.returncode, output or ""


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


# TensorFlow's C++ log lines (`I0000 00:00:17.5 123 file.cc:31] ...`) and
# absl's notice before it initializes: start-up noise, never the error.
_TF_LOG_LINE = re.compile(
    r"^(\[worker \d+\] )?([IWEF]\d{4} \d\d:\d\d:[\d.]+\s+\d+ \S+:\d+\]|"
    r"WARNING: All log messages before absl::InitializeLog)"
)


def _tail(output: str, lines: int = 15) -> str:
    """The last lines of a failed run's output, without TensorFlow's log lines."""
    kept = [
        line
        for line in output.strip().splitlines()
        if line.strip() and not _TF_LOG_LINE.match(line)
    ]
    return "\n".join(kept[-lines:])
