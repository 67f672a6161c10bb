# SPDX-License-Identifier: Apache-2.0
"""The suite's plot: throughput against replicas, and throughput vs mirrored.

One row per model, its input size in both titles. Left: samples/s against
replicas for every mode measured; on real devices also the ideal line (the
one-device throughput times N), which simulated devices sharing the same
cores cannot reach, so it is not drawn for them. Right: each mode's
throughput over the hand-written `MirroredStrategy` at the same replica
count (1.0 = the native baseline; below 1 slower), as grouped bars with
their values and 95% intervals, over the grey band of the model's A/A
control (the noise of two identical configurations in the same run). A bar
whose ratio is no difference the run could measure is faint and labelled
"n.d." (no difference measured); the left panel's points carry their
intervals too.

Every mode keeps one colour, one marker (left) and one hatch (right) in every
panel, and one legend (for the whole figure) names them; nothing is drawn
that is not a measured value or a named reference line. Modes measured at
the same replica count are drawn side by side (offset on the x axis), so no
point hides another. A panel with failed runs says so, naming them.
"""

from __future__ import annotations

from typing import Any

from benchmarks import stats
from benchmarks.suite import models
from benchmarks.suite import modes as modes_lib

# One style per mode, fixed by its place in MODES so that a mode looks the
# same in every panel and in every plot the suite draws.
_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
_MARKERS = ("o", "s", "D", "^", "v", "P")
_HATCHES = ("", "//", "..", "xx", "\\\\", "--")
STYLES = {
    mode: {
        "color": _COLOURS[index % len(_COLOURS)],
        "marker": _MARKERS[index % len(_MARKERS)],
        "hatch": _HATCHES[index % len(_HATCHES)],
    }
    for index, mode in enumerate(modes_lib.MODES)
}
_UNKNOWN_STYLE = {"color": "#7f7f7f", "marker": "X", "hatch": "++"}
_OFFSET = 0.06  # x offset between modes at one replica count, in replicas.
_BAND_COLOUR = "#999999"
_BAND_ALPHA = 0.3
# A bar whose ratio is no difference the run could measure is drawn faint.
_FAINT = 0.35


def style(mode: str) -> dict[str, str]:
    """The colour and marker of `mode` in every panel."""
    return STYLES.get(mode, _UNKNOWN_STYLE)


def plot(results, path: str | None = None):
    """Draws `results` (a `SuiteResults`); saves a PNG when `path` is given.

    Args:
        results: The suite's results.
        path: Where to save the PNG. Defaults to None (not saved).

    Returns:
        The matplotlib `Figure`.
    """
    from matplotlib import pyplot
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    runs = [run for run in results.runs if run.get("samples_per_s")]
    failed = [run for run in results.runs if run.get("status") != "ok"]
    simulated = bool(results.header.get("devices_simulated"))
    model_names = list(dict.fromkeys(run["model"] for run in results.runs)) or ["(none)"]
    measured = _ordered_modes({run["mode"] for run in runs})
    figure, axes = pyplot.subplots(
        len(model_names),
        2,
        figsize=(11, 3.3 * len(model_names) + 0.9),
        squeeze=False,
        layout="constrained",
    )
    for row, model in enumerate(model_names):
        model_runs = [run for run in runs if run["model"] == model]
        label = f"{model}, input {_input_size(model, model_runs, results.header)}"
        model_failed = [run for run in failed if run["model"] == model]
        _throughput_panel(axes[row][0], label, model_runs, measured, ideal=not simulated)
        control = (results.header.get("aa_controls") or {}).get(model, {})
        _relative_panel(axes[row][1], label, model_runs, measured, control.get("ratio_ci95"))
        if model_failed:
            _note_failures(axes[row][0], model_failed)
            _note_failures(axes[row][1], model_failed)
    handles = (
        [
            Patch(
                facecolor=style(mode)["color"],
                hatch=style(mode)["hatch"],
                edgecolor="white",
                label=mode,
            )
            for mode in measured
        ]
        + (
            []
            if simulated
            else [
                Line2D([], [], color="k", linestyle="--", label="ideal (1 device x N), left"),
            ]
        )
        + [
            Line2D([], [], color="k", linestyle=":", label="mirrored = 1, right"),
            Patch(facecolor=_BAND_COLOUR, alpha=_BAND_ALPHA, label="A/A control's 95% band, right"),
            Line2D([], [], color="k", linewidth=1, label="95% interval (error bars)"),
        ]
    )
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), 4),
        fontsize="small",
        frameon=False,
    )
    title = "parallel_keras benchmark suite"
    if simulated:
        title += " (simulated CPU devices: overhead, not speedup)"
    figure.suptitle(title)
    if path is not None:
        figure.savefig(path, dpi=90)
    return figure


def _ordered_modes(names) -> list[str]:
    known = [mode for mode in modes_lib.MODES if mode in names]
    return known + sorted(set(names) - set(known))


def _line_style(mode: str) -> dict[str, Any]:
    chosen = style(mode)
    return {"color": chosen["color"], "marker": chosen["marker"], "markersize": 7}


def _input_size(model: str, runs: list[dict[str, Any]], header: dict[str, Any]) -> str:
    shape = next((run.get("input_shape") for run in runs if run.get("input_shape")), None)
    if shape is None and model in models.MODELS:  # Results written before input_shape.
        config = header.get("config", {})
        if str(config.get("dataset", "synthetic")) == "synthetic":
            shape = models.default_input(model, bool(config.get("quick"))).shape
    if shape is None:
        return "input size not recorded"
    return "x".join(str(size) for size in shape)


def _offsets(modes: list[str]) -> dict[str, float]:
    middle = (len(modes) - 1) / 2
    return {mode: (index - middle) * _OFFSET for index, mode in enumerate(modes)}


def _note_failures(axis, failed: list[dict[str, Any]]) -> None:
    names = ", ".join(f"{run['mode']} x{run['replicas']}" for run in failed)
    axis.text(
        0.02,
        0.98,
        f"failed (see the table): {names}",
        transform=axis.transAxes,
        ha="left",
        va="top",
        fontsize="x-small",
        color="#c44e52",
        wrap=True,
    )


def _throughput_panel(
    axis, label: str, runs: list[dict[str, Any]], measured: list[str], ideal: bool
) -> None:
    by_mode: dict[str, list[tuple[int, float]]] = {}
    for run in runs:
        by_mode.setdefault(run["mode"], []).append((run["replicas"], run["samples_per_s"]))
    counts = sorted({run["replicas"] for run in runs}) or [1]
    single = next((value for replicas, value in by_mode.get("single", []) if replicas == 1), None)
    if single and ideal:
        axis.plot(counts, [single * n for n in counts], "k--", linewidth=1)
    present = [mode for mode in measured if mode in by_mode]
    offsets = _offsets(present)
    intervals = {
        (run["mode"], run["replicas"]): run["samples_per_s_ci95"]
        for run in runs
        if run.get("samples_per_s_ci95")
    }
    for mode in present:
        points = sorted(by_mode[mode])
        xs = [replicas + offsets[mode] for replicas, _ in points]
        axis.plot(xs, [value for _, value in points], linestyle="-", **_line_style(mode))
        with_interval = [
            (x, value, intervals[mode, replicas])
            for x, (replicas, value) in zip(xs, points)
            if (mode, replicas) in intervals
        ]
        if with_interval:
            axis.errorbar(
                [x for x, _, _ in with_interval],
                [value for _, value, _ in with_interval],
                yerr=_yerr(with_interval),
                fmt="none",
                ecolor=style(mode)["color"],
                capsize=0,
                linewidth=1.5,
            )
    axis.set_title(f"{label}: throughput", fontsize="medium")
    axis.set_xlabel("replicas")
    axis.set_ylabel("samples/s")
    axis.set_xticks(counts)
    axis.set_xlim(counts[0] - 0.4, counts[-1] + 0.4)
    axis.set_ylim(bottom=0)
    axis.margins(y=0.12)


def _yerr(points) -> list[list[float]]:
    """Error bar lengths below and above each value, from its interval."""
    return [
        [max(value - interval[0], 0.0) for _, value, interval in points],
        [max(interval[1] - value, 0.0) for _, value, interval in points],
    ]


def _relative_panel(
    axis,
    label: str,
    runs: list[dict[str, Any]],
    measured: list[str],
    control_interval: list[float] | None = None,
) -> None:
    values: dict[str, dict[int, float]] = {}
    intervals: dict[str, dict[int, list[float]]] = {}
    undecided: dict[str, set[int]] = {}
    for run in runs:
        if run.get("vs_mirrored"):
            values.setdefault(run["mode"], {})[run["replicas"]] = run["vs_mirrored"]
            if run.get("vs_mirrored_ci95"):
                intervals.setdefault(run["mode"], {})[run["replicas"]] = run["vs_mirrored_ci95"]
            if run.get("vs_mirrored_verdict") == stats.NO_DIFFERENCE:
                undecided.setdefault(run["mode"], set()).add(run["replicas"])
    if control_interval:
        axis.axhspan(*control_interval, color=_BAND_COLOUR, alpha=_BAND_ALPHA, linewidth=0)
    counts = sorted({count for by_count in values.values() for count in by_count})
    present = [mode for mode in measured if mode in values]
    width = 0.8 / max(len(present), 1)
    highest = 1.0
    for number, mode in enumerate(present):
        shift = (number - (len(present) - 1) / 2) * width
        shown = [count for count in counts if count in values[mode]]
        xs = [index + shift for index, count in enumerate(counts) if count in values[mode]]
        bars = axis.bar(
            xs,
            [values[mode][count] for count in shown],
            width,
            color=style(mode)["color"],
            hatch=style(mode)["hatch"],
            edgecolor="white",
        )
        for bar, count in zip(bars, shown):
            if count in undecided.get(mode, ()):
                bar.set_alpha(_FAINT)
        with_interval = [
            (x, values[mode][count], intervals[mode][count])
            for x, count in zip(xs, shown)
            if count in intervals.get(mode, {})
        ]
        if with_interval:
            axis.errorbar(
                [x for x, _, _ in with_interval],
                [value for _, value, _ in with_interval],
                yerr=_yerr(with_interval),
                fmt="none",
                ecolor="k",
                capsize=0,
                linewidth=1,
            )
        tops = [interval[1] for _, _, interval in with_interval]
        highest = max([highest, *values[mode].values(), *tops])
        axis.bar_label(
            bars,
            labels=[
                "n.d." if count in undecided.get(mode, ()) else f"{values[mode][count]:.2f}"
                for count in shown
            ],
            label_type="center",
            fontsize="x-small",
            bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0, "pad": 1},
        )
    axis.axhline(1.0, color="k", linestyle=":", linewidth=1)
    axis.set_xticks(range(len(counts)), [str(count) for count in counts])
    axis.set_xlim(-0.6, max(len(counts), 1) - 0.4)
    axis.set_ylim(0, highest * 1.18)  # Room for the value labels inside the frame.
    axis.set_title(f"{label}: throughput / mirrored", fontsize="medium")
    axis.set_xlabel("replicas")
    axis.set_ylabel("relative to mirrored")
    if not present:
        mirrored = [run for run in runs if run["mode"] == modes_lib.MIRRORED]
        reason = "mirrored was not measured" if not mirrored else "nothing to compare"
        axis.text(0.5, 0.5, reason, transform=axis.transAxes, ha="center")
