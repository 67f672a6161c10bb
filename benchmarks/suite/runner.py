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
    groups = _groups(runs)
    load_before = _load_average()
    say(
        f"Benchmark suite: {len(runs)} runs in {len(groups)} "
        f"process{'es' if len(groups) != 1 else ''} ({len(skipped)} "
        f"combinations skipped), {os.cpu_count()} CPUs, load average {load_before}, "
        f"global batch {config.global_batch_size}; each model's configurations and an "
        f"A/A control alternate in {config.rounds} rounds of {config.steps} steps "
        f"(after {config.warmup_steps} warm-up steps), data {dataset_spec}."
    )
    records: dict[RunSpec, dict[str, Any]] = {}
    controls: dict[str, dict[str, Any]] = {}
    durations: dict[str, list[float]] = {}
    started = time.monotonic()
    for number, group in enumerate(groups, 1):
        run_started = time.monotonic()
        control = _control_of(group)
        measured = _run_group(group, control, config, dataset_spec)
        records.update(measured)
        if control is not None and CONTROL_KEY in measured.get(control, {}):
            controls[group[0].model] = {
                "reference": str(control),
                "round_step_medians_s": measured[control].pop(CONTROL_KEY),
            }
        seconds = time.monotonic() - run_started
        durations.setdefault(group[0].model, []).append(seconds)
        eta = _eta(groups[number:], durations)
        lines = [
            f"[{number}/{len(groups)}] {str(spec):<36} {_summary(measured[spec])}" for spec in group
        ]
        lines[-1] += (
            f"  ({seconds:.0f}s, elapsed {_clock(time.monotonic() - started)}, ETA {_clock(eta)})"
        )
        say("\n".join(lines))
    ordered = [records[spec] for spec in runs]
    results_lib.derive(ordered, controls)
    ok = [record for record in ordered if record["status"] == "ok"]
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
        # Other jobs on the machine move every figure; say how busy it was.
        "load_average": {"start": load_before, "end": _load_average()},
        "aa_controls": controls,
        # oneDNN changes CPU kernels (and their speed) a lot; note the setting.
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
    }
    return results_lib.SuiteResults(header, ordered, skipped)


# Where a group's measured A/A control rounds travel with its reference's record.
CONTROL_KEY = "_control_rounds"


def _groups(runs: list[RunSpec]) -> list[list[RunSpec]]:
    """The processes of a suite: one per model, and one per multi-worker run.

    A model's configurations share a process (and are timed in alternating
    rounds); a `multi_worker` run needs processes of its own.
    """
    groups: dict[Any, list[RunSpec]] = {}
    for spec in runs:
        key = spec if spec.mode == modes.MULTI_WORKER else spec.model
        groups.setdefault(key, []).append(spec)
    return list(groups.values())


def _control_of(group: list[RunSpec]) -> RunSpec | None:
    """The configuration measured twice: `mirrored` at the most replicas, else the first."""
    if group[0].mode == modes.MULTI_WORKER:
        return None
    mirrored = [spec for spec in group if spec.mode == modes.MIRRORED]
    return max(mirrored, key=lambda spec: spec.replicas) if mirrored else group[0]


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _summary(record: dict[str, Any]) -> str:
    if record["status"] != "ok":
        return f"FAILED: {record['error'].splitlines()[-1][:100]}"
    median = statistics.median(record["round_step_medians_s"])
    return f"{record['global_batch_size'] / median:8.1f} samples/s, step {median * 1000:.1f} ms"


def _eta(remaining: list[list[RunSpec]], durations: dict[str, list[float]]) -> float:
    """Seconds left: each remaining group costs what its model's groups cost."""
    every = [seconds for values in durations.values() for seconds in values]
    overall = statistics.mean(every) if every else 0.0
    return sum(
        statistics.mean(durations[group[0].model]) if group[0].model in durations else overall
        for group in remaining
    )


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s"


def _run_group(
    group: list[RunSpec],
    control: RunSpec | None,
    config: config_lib.SuiteConfig,
    dataset_spec: datasets.DatasetSpec,
) -> dict[RunSpec, dict[str, Any]]:
    """Measures `group` (one model's configurations) in one process; a record per spec."""
    model = group[0].model
    input_spec = datasets.input_spec_for(model, dataset_spec, config.data_dir, config.quick)
    payload = {
        "model": model,
        "runs": [
            {"name": str(spec), "mode": spec.mode, "replicas": spec.replicas} for spec in group
        ],
        "control": str(control) if control is not None else None,
        "global_batch_size": config.global_batch_size,
        "steps": config.steps,
        "rounds": config.rounds,
        "warmup_steps": config.warmup_steps,
        "dataset": dataclasses.asdict(dataset_spec),
        "data_dir": config.data_dir,
        "input": dataclasses.asdict(input_spec),
        "simulated_devices": config.simulated_devices,
    }
    records = {}
    for spec in group:
        record: dict[str, Any] = {key: None for key in results_lib.RUN_KEYS}
        record.update(
            model=spec.model,
            mode=spec.mode,
            replicas=spec.replicas,
            global_batch_size=config.global_batch_size,
            steps=config.steps,
            rounds=config.rounds,
            warmup_steps=config.warmup_steps,
            dataset=str(dataset_spec),
            input_shape=list(input_spec.shape),
            status="ok",
            error=None,
        )
        records[spec] = record
    configurations = len(group) + (control is not None)
    with tempfile.TemporaryDirectory(prefix="pk_bench_") as folder:
        result_path = os.path.join(folder, "result.json")
        command = _command(group[0], json.dumps(payload), result_path)
        returncode, output = _execute(
            command,
            config.run_timeout_s * configurations,
            f"{configurations} configurations x run_timeout_s={config.run_timeout_s:g}",
        )
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
        for record in records.values():
            record.update(status="error", error=reason)
        return records
    # Every worker of a multi-worker run has its own process; report the largest.
    peak_rss_mb = max(
        [measured["peak_rss_mb"]] + [worker.get("peak_rss_mb") or 0 for worker in worker_records]
    )
    shared = {key: measured[key] for key in ("simulated", "gpus", "tf_version", "keras_version")}
    for spec, record in records.items():
        record.update(shared, peak_rss_mb=peak_rss_mb, **measured["runs"][str(spec)])
    if control is not None:
        records[control][CONTROL_KEY] = measured["runs"]["control"]["round_step_medians_s"]
    return records


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


def _execute(
    command: list[str], timeout_s: float, budget: str = "run_timeout_s"
) -> tuple[int, str]:
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
        return -1, (output or "") + f"\nTimed out after {timeout_s:g}s ({budget})."
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
