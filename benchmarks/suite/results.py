# SPDX-License-Identifier: Apache-2.0
"""Benchmark results: one record per run, a header, the JSON file, the table.

The JSON file is what `--baseline` compares against and what the README
shows. Its layout:

    {"schema_version": 1,
     "header": {"machine": {...}, "devices_simulated": ..., "note": ..., ...},
     "runs": [{"model": ..., "mode": ..., "replicas": ..., ...}, ...],
     "skipped": [{"model": ..., "mode": ..., "replicas": ..., "reason": ...}]}

`samples_per_s` is `global_batch_size / step_time_median_s` (the median
resists steps stalled by other processes; `step_time_mean_s` is there too).
Derived figures compare like with like: `vs_single` is throughput over the
one-device `single` run of the same model, `vs_mirrored` over `mirrored` at
the same replica count, and `scaling_efficiency` is
`samples_per_s / (replicas * single samples_per_s)`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
from collections.abc import Sequence
from typing import Any

SCHEMA_VERSION = 1

# Every run record has at least these keys (None where not applicable).
RUN_KEYS = (
    "model",
    "mode",
    "replicas",
    "global_batch_size",
    "step_time_median_s",
    "step_time_p90_s",
    "samples_per_s",
    "vs_single",
    "vs_mirrored",
    "scaling_efficiency",
    "peak_rss_mb",
    "setup_s",
    "devices",
    "tf_version",
    "keras_version",
)
HEADER_KEYS = ("machine", "devices_simulated", "note", "config", "created")
MACHINE_KEYS = ("cpu_count", "gpus", "platform", "python")

SIMULATED_NOTE = (
    "Devices are simulated CPU devices sharing the same cores: scaling "
    "figures measure overhead, not speedup (what each mode costs against "
    "one device and against the native MirroredStrategy)."
)


@dataclasses.dataclass(frozen=True, order=True)
class RunSpec:
    """One measurement: a model, a mode and a replica count."""

    model: str
    mode: str
    replicas: int

    def __str__(self) -> str:
        return f"{self.model} {self.mode} x{self.replicas}"


def machine_info(gpus: Sequence[str] = ()) -> dict[str, Any]:
    """The machine a suite ran on (no TensorFlow needed)."""
    return {
        "cpu_count": os.cpu_count(),
        "gpus": list(gpus),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def derive(runs: list[dict[str, Any]]) -> None:
    """Fills `vs_single`, `vs_mirrored` and `scaling_efficiency` in place."""

    def throughput(model, mode, replicas):
        for run in runs:
            if (run["model"], run["mode"], run["replicas"]) == (model, mode, replicas):
                return run.get("samples_per_s")
        return None

    for run in runs:
        value = run.get("samples_per_s")
        single = throughput(run["model"], "single", 1)
        mirrored = throughput(run["model"], "mirrored", run["replicas"])
        run["vs_single"] = _ratio(value, single)
        run["vs_mirrored"] = _ratio(value, mirrored)
        run["scaling_efficiency"] = _ratio(value, single * run["replicas"] if single else None)


def _ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return numerator / denominator


@dataclasses.dataclass
class SuiteResults:
    """What one suite run measured. Its repr is the results table.

    Attributes:
        header: Machine, configuration and the simulated-devices note.
        runs: One dict per run, with at least `RUN_KEYS`, plus `status`
            (`"ok"` or `"error"`) and `error`.
        skipped: Combinations that are not runs, each with its reason.
    """

    header: dict[str, Any]
    runs: list[dict[str, Any]]
    skipped: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The runs that did not produce a measurement."""
        return [run for run in self.runs if run.get("status") != "ok"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "header": self.header,
            "runs": self.runs,
            "skipped": self.skipped,
        }

    def save(self, path: str) -> str:
        """Writes the JSON file (creating its folder); returns `path`."""
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        temporary = f"{path}.tmp"
        with open(temporary, "w") as stream:
            json.dump(self.to_dict(), stream, indent=2)
            stream.write("\n")
        os.replace(temporary, path)
        return path

    @classmethod
    def load(cls, path: str) -> SuiteResults:
        """Reads a JSON file written by `save`.

        Raises:
            ValueError: If the file is not a benchmark results file.
        """
        with open(path) as stream:
            data = json.load(stream)
        problems = validate(data)
        if problems:
            raise ValueError(
                "Not a parallel_keras benchmark results file. Received: "
                f"{path} with problems: {problems[:5]}. Pass a file written "
                "by `python -m benchmarks --output=...`."
            )
        return cls(data["header"], data["runs"], data.get("skipped", []))

    def table(self) -> str:
        """The results as a fixed-width text table."""
        return format_table(self.runs)

    def plot(self, path: str | None = None):
        """Draws the plot; saves it to `path` when given. Returns the figure."""
        from benchmarks.suite import plot

        return plot.plot(self, path)

    def __repr__(self) -> str:
        machine = self.header.get("machine", {})
        lines = [
            f"<SuiteResults {len(self.runs)} runs ({len(self.failed)} failed), "
            f"{machine.get('cpu_count')} CPUs, GPUs: {machine.get('gpus') or 'none'}"
            f"{', simulated devices' if self.header.get('devices_simulated') else ''}>",
            self.table(),
        ]
        if self.header.get("devices_simulated"):
            lines.append(SIMULATED_NOTE)
        return "\n".join(lines)


_COLUMNS = (
    ("model", "model", "{}"),
    ("mode", "mode", "{}"),
    ("replicas", "N", "{}"),
    ("step_time_median_s", "step ms", "ms"),
    ("step_time_p90_s", "p90 ms", "ms"),
    ("samples_per_s", "samples/s", "{:.1f}"),
    ("vs_single", "vs single", "{:.2f}"),
    ("vs_mirrored", "vs mirrored", "{:.2f}"),
    ("scaling_efficiency", "efficiency", "{:.0%}"),
    ("peak_rss_mb", "RSS MB", "{:.0f}"),
    ("setup_s", "setup s", "{:.2f}"),
)


def _cell(run, key, form) -> str:
    value = run.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "error" if key == "samples_per_s" and run.get("status") == "error" else "-"
    if form == "ms":
        return f"{value * 1000:.1f}"
    return form.format(value)


def format_table(runs: list[dict[str, Any]]) -> str:
    """A fixed-width table of run records, one line per run."""
    rows = [[title for _, title, _ in _COLUMNS]]
    rows += [[_cell(run, key, form) for key, _, form in _COLUMNS] for run in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = []
    for number, row in enumerate(rows):
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def validate(data: Any) -> list[str]:
    """Problems with a results document (empty when it matches the schema)."""
    problems = []
    if not isinstance(data, dict):
        return [f"top level is {type(data).__name__}, not an object"]
    if data.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version is {data.get('schema_version')!r}")
    header = data.get("header")
    if not isinstance(header, dict):
        return problems + ["no header object"]
    problems += [f"header lacks {key!r}" for key in HEADER_KEYS if key not in header]
    machine = header.get("machine") or {}
    problems += [f"machine lacks {key!r}" for key in MACHINE_KEYS if key not in machine]
    runs = data.get("runs")
    if not isinstance(runs, list):
        return problems + ["no runs list"]
    for index, run in enumerate(runs):
        problems += [f"run {index} lacks {key!r}" for key in RUN_KEYS if key not in run]
    return problems
