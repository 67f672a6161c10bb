# SPDX-License-Identifier: Apache-2.0
"""Benchmark results: one record per run, a header, the JSON file, the table.

The JSON file is what `--baseline` compares against and what the README
shows. Its layout:

    {"schema_version": 1,
     "header": {"machine": {...}, "devices_simulated": ..., "note": ..., ...},
     "runs": [{"model": ..., "mode": ..., "replicas": ..., ...}, ...],
     "skipped": [{"model": ..., "mode": ..., "replicas": ..., "reason": ...}]}

Each run holds `round_step_medians_s`, its median step time in each of the
alternating rounds its model's configurations ran in (one process per
model). `step_time_median_s` is their median and `samples_per_s` is
`global_batch_size / step_time_median_s`. Derived figures compare like with
like, round by round (`benchmarks.stats`), each with a 95% interval
(`*_ci95`) and a `*_verdict` that reads "no difference measured" when the
interval includes 1 or lies within the model's A/A control
(`header["aa_controls"]`): `vs_single` is throughput over the one-device
`single` run of the same model, `vs_mirrored` over `mirrored` at the same
replica count, and `scaling_efficiency` is `vs_single / replicas`; an
efficiency above 100% is flagged (`efficiency_flag`), not shown.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
from collections.abc import Sequence
from typing import Any

from benchmarks import stats

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
        "cpu": _cpu_name(),
        "gpus": list(gpus),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as stream:
            for line in stream:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def derive(runs: list[dict[str, Any]], controls: dict[str, dict[str, Any]] | None = None) -> None:
    """Fills the step-time figures and the ratios, each with its interval, in place.

    Args:
        runs: Run records. A record with `round_step_medians_s` (one median
            step time per alternating round) gets `step_time_median_s`,
            `step_time_p90_s` and `samples_per_s` from them; ratios between
            two runs of the same model's process pair their rounds
            (`benchmarks.stats.paired_ratio`). A record with only
            `samples_per_s` (an older file) gets point ratios, with no
            interval.
        controls: Per model, the A/A control: `reference` (the run measured
            twice, as `"model mode xN"`) and its second instance's
            `round_step_medians_s`. Its ratio to the reference (`ratio`,
            `ratio_ci95`) is added; every ratio of that model is judged
            against it. Defaults to None.
    """
    controls = controls if controls is not None else {}
    for run in runs:
        rounds = run.get("round_step_medians_s")
        if rounds and run.get("status", "ok") == "ok":
            step = stats.median_interval(rounds)
            run["step_time_median_s"] = step.median
            run["step_time_p90_s"] = _percentile(rounds, 0.9)
            run["samples_per_s"] = run["global_batch_size"] / step.median
            samples = step.inverse().scaled(run["global_batch_size"])
            run["samples_per_s_ci95"] = [samples.low, samples.high]

    def find(model, mode, replicas):
        for run in runs:
            if (run["model"], run["mode"], run["replicas"]) == (model, mode, replicas):
                return run if run.get("samples_per_s") else None
        return None

    control_ratios = {}
    for model, control in controls.items():
        reference = next((run for run in runs if _label(run) == control["reference"]), None)
        if reference and reference.get("round_step_medians_s"):
            ratio = stats.paired_ratio(
                reference["round_step_medians_s"], control["round_step_medians_s"]
            )
            control["ratio"] = ratio.median
            control["ratio_ci95"] = [ratio.low, ratio.high]
            control_ratios[model] = ratio

    for run in runs:
        control = control_ratios.get(run["model"])
        single = find(run["model"], "single", 1)
        mirrored = find(run["model"], "mirrored", run["replicas"])
        # Intervals are stored as printed: widened by the model's A/A control.
        vs_single = _compare(run, single)
        run["vs_single"], run["vs_single_ci95"] = _split(_widened(vs_single, control))
        run["vs_single_verdict"] = _verdict(run, single, vs_single, control)
        vs_mirrored = _compare(run, mirrored)
        run["vs_mirrored"], run["vs_mirrored_ci95"] = _split(_widened(vs_mirrored, control))
        run["vs_mirrored_verdict"] = _verdict(run, mirrored, vs_mirrored, control)
        efficiency = vs_single.scaled(1 / run["replicas"]) if vs_single else None
        run["scaling_efficiency"], run["scaling_efficiency_ci95"] = _split(
            _widened(efficiency, control)
        )
        run["efficiency_flag"] = None
        if efficiency is not None and run is not single and efficiency.median > 1:
            if efficiency.low > 1 or stats.differs(efficiency, control):
                run["efficiency_flag"] = IMPOSSIBLE_EFFICIENCY


IMPOSSIBLE_EFFICIENCY = (
    "above 100%: N devices cannot do more than N times the work of one, so "
    "this run and the single-device run differ in more than their devices "
    "(or noise moved one of them); not shown"
)


def _label(run: dict[str, Any]) -> str:
    return str(RunSpec(run["model"], run["mode"], run["replicas"]))


def _percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile of `values`, by linear interpolation."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _paired(run: dict[str, Any], reference: dict[str, Any]) -> bool:
    """Whether two runs were timed in the same rounds of one process."""
    return (
        bool(run.get("round_step_medians_s"))
        and bool(reference.get("round_step_medians_s"))
        and "multi_worker" not in (run["mode"], reference["mode"])
        and len(run["round_step_medians_s"]) == len(reference["round_step_medians_s"])
    )


def _compare(run: dict[str, Any], reference: dict[str, Any] | None) -> stats.PairedRatio | None:
    """Throughput of `run` over `reference`'s, round by round, with its interval."""
    if reference is None or not run.get("samples_per_s"):
        return None
    if run is reference:
        return stats.PairedRatio(1.0, 1.0, 1.0)
    if _paired(run, reference):
        return stats.paired_ratio(reference["round_step_medians_s"], run["round_step_medians_s"])
    if run.get("round_step_medians_s") or reference.get("round_step_medians_s"):
        # Timed in different processes: no rounds to pair, so no figure to decide from.
        return None
    point = run["samples_per_s"] / reference["samples_per_s"]
    return stats.PairedRatio(point, -math.inf, math.inf)


def _widened(
    ratio: stats.PairedRatio | None, control: stats.PairedRatio | None
) -> stats.PairedRatio | None:
    if ratio is None or not math.isfinite(ratio.high - ratio.low):
        return ratio
    return stats.with_control(ratio, control)


def _split(ratio: stats.PairedRatio | None) -> tuple[float | None, list[float] | None]:
    if ratio is None:
        return None, None
    interval = [ratio.low, ratio.high] if math.isfinite(ratio.high - ratio.low) else None
    return ratio.median, interval


def _verdict(run, reference, ratio, control) -> str | None:
    if ratio is None:
        if reference is not None and run.get("samples_per_s") and run is not reference:
            return "not compared (separate processes)"
        return None
    if run is reference:
        return "reference"
    return stats.verdict(ratio, control)


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
        """The results as a fixed-width text table, then what its noise allows."""
        noise = noise_report(self.header, self.runs)
        return format_table(self.runs) + (f"\n\n{noise}" if noise else "")

    def markdown(self) -> str:
        """The table in Markdown, then the noise and the provenance lines.

        `docs/benchmarks.md`'s table is this, from the recorded run:
        `SuiteResults.load("benchmarks/results/quick.json").markdown()`.
        """
        noise = noise_report(self.header, self.runs)
        parts = [format_markdown(self.runs), provenance(self.header)]
        if noise:
            parts.insert(1, noise)
        return "\n\n".join(parts)

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
    ("samples_per_s", "samples/s", "{:.1f}"),
    ("vs_single", "vs single [95%]", "verdict"),
    ("vs_mirrored", "vs mirrored [95%]", "verdict"),
    ("scaling_efficiency", "efficiency [95%]", "efficiency"),
    ("peak_rss_mb", "RSS MB", "{:.0f}"),
    ("setup_s", "setup s", "{:.2f}"),
)


def _cell(run, key, form) -> str:
    if form == "verdict" and run.get(f"{key}_verdict"):
        return run[f"{key}_verdict"]
    if form == "efficiency" and run.get("efficiency_flag"):
        return "FLAGGED (>100%)"
    if form == "efficiency" and run.get("vs_single_verdict") == "reference":
        return "reference"
    if form == "efficiency" and (run.get(key) or 0) > 1:
        # Above 100% but within noise: not a figure to read as superlinear.
        return f"~100% ({stats.NO_DIFFERENCE})"
    value = run.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "error" if key == "samples_per_s" and run.get("status") == "error" else "-"
    if form == "ms":
        return f"{value * 1000:.1f}"
    if form in ("verdict", "efficiency"):
        interval = run.get(f"{key}_ci95")
        percent = form == "efficiency"
        shown = f"{value:.0%}" if percent else f"{value:.2f}"
        if interval:
            low, high = (f"{bound:.0%}" if percent else f"{bound:.2f}" for bound in interval)
            shown += f" [{low}, {high}]"
        return shown
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


def format_markdown(runs: list[dict[str, Any]]) -> str:
    """The table of `format_table` as Markdown (what docs/benchmarks.md shows)."""
    lines = [
        "| " + " | ".join(title for _, title, _ in _COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    for run in runs:
        lines.append("| " + " | ".join(_cell(run, key, form) for key, _, form in _COLUMNS) + " |")
    return "\n".join(lines)


def provenance(header: dict[str, Any]) -> str:
    """When, on what and under what load a run was measured (one line)."""
    machine = header.get("machine") or {}
    load = header.get("load_average") or {}
    return (
        f"Measured {header.get('created')} on {machine.get('cpu', 'an unnamed CPU')} "
        f"({machine.get('cpu_count')} CPUs, GPUs: {', '.join(machine.get('gpus') or []) or 'none'}), "
        f"load average {load.get('start')} at the start and {load.get('end')} at the end; "
        f"TensorFlow {header.get('tf_version')}, Keras {header.get('keras_version')}."
    )


def noise_report(header: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """What this run can tell apart: its A/A controls, and its flagged rows."""
    lines = []
    rounds = (header.get("config") or {}).get("rounds")
    for model, control in (header.get("aa_controls") or {}).items():
        if "ratio" in control:
            ratio = stats.PairedRatio(control["ratio"], *control["ratio_ci95"])
            lines.append(stats.noise_line(f"{model} ({control['reference']} twice)", ratio))
    if lines:
        lines.insert(
            0,
            f"Noise ({rounds} alternating rounds; every interval is widened by its "
            "model's A/A control below; a ratio whose interval includes 1 or lies "
            f"within that control reads '{stats.NO_DIFFERENCE}'):",
        )
    flagged = [run for run in runs if run.get("efficiency_flag")]
    for run in flagged:
        lines.append(f"FLAGGED {_label(run)}: efficiency {IMPOSSIBLE_EFFICIENCY}.")
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
