"""The suite's plot: throughput against replicas, and the shim's overhead.

One row per model. Left: samples/s against replicas for each mode, with the
ideal line (the one-device throughput times N). Right: bars of the shim's
throughput relative to the hand-written `MirroredStrategy` at the same
replica count (1.0 = no overhead; below 1 the shim is slower), for
`multi_gpu_model` and `cpu_relocation`.
"""

from __future__ import annotations

from typing import Any

_SHIM_MODES = ("multi_gpu_model", "cpu_relocation")


def plot(results, path: str | None = None):
    """Draws `results` (a `SuiteResults`); saves a PNG when `path` is given.

    Args:
        results: The suite's results.
        path: Where to save the PNG. Defaults to None (not saved).

    Returns:
        The matplotlib `Figure`.
    """
    from matplotlib import pyplot

    runs = [run for run in results.runs if run.get("samples_per_s")]
    model_names = list(dict.fromkeys(run["model"] for run in results.runs)) or ["(none)"]
    figure, axes = pyplot.subplots(
        len(model_names), 2, figsize=(11, 3.2 * len(model_names)), squeeze=False
    )
    for row, model in enumerate(model_names):
        _throughput_panel(axes[row][0], model, [r for r in runs if r["model"] == model])
        _overhead_panel(axes[row][1], model, [r for r in runs if r["model"] == model])
    title = "parallel_keras benchmark suite"
    if results.header.get("devices_simulated"):
        title += " (simulated CPU devices: overhead, not speedup)"
    figure.suptitle(title)
    figure.tight_layout(rect=(0, 0, 1, 0.98))
    if path is not None:
        figure.savefig(path, dpi=90)
    return figure


def _throughput_panel(axis, model: str, runs: list[dict[str, Any]]) -> None:
    by_mode: dict[str, list[tuple[int, float]]] = {}
    for run in runs:
        by_mode.setdefault(run["mode"], []).append((run["replicas"], run["samples_per_s"]))
    counts = sorted({run["replicas"] for run in runs}) or [1]
    single = next(
        (value for replicas, value in by_mode.get("single", []) if replicas == 1), None
    )
    if single:
        axis.plot(counts, [single * n for n in counts], "k--", label="ideal (linear)")
    for mode, points in by_mode.items():
        points.sort()
        axis.plot(
            [replicas for replicas, _ in points],
            [value for _, value in points],
            marker="o",
            label=mode,
        )
    axis.set_title(f"{model}: throughput")
    axis.set_xlabel("replicas")
    axis.set_ylabel("samples/s")
    axis.set_xticks(counts)
    axis.legend(fontsize="small")


def _overhead_panel(axis, model: str, runs: list[dict[str, Any]]) -> None:
    counts = sorted({run["replicas"] for run in runs if run["replicas"] > 1})
    width = 0.8 / len(_SHIM_MODES)
    drawn = False
    for number, mode in enumerate(_SHIM_MODES):
        values = {
            run["replicas"]: run["vs_mirrored"]
            for run in runs
            if run["mode"] == mode and run.get("vs_mirrored")
        }
        if not values:
            continue
        drawn = True
        positions = [
            index + (number - (len(_SHIM_MODES) - 1) / 2) * width
            for index, count in enumerate(counts)
            if count in values
        ]
        bars = axis.bar(
            positions, [values[count] for count in counts if count in values],
            width, label=mode,
        )
        axis.bar_label(bars, fmt="%.2f", fontsize="small")
    axis.axhline(1.0, color="k", linestyle="--", label="mirrored (native) = 1")
    axis.set_xticks(range(len(counts)), [str(count) for count in counts])
    axis.set_xlim(-0.9, len(counts) - 0.1)
    axis.set_title(f"{model}: shim throughput / mirrored")
    axis.set_xlabel("replicas")
    axis.set_ylabel("relative throughput")
    if not drawn:
        axis.text(0.5, 0.5, "no shim runs", transform=axis.transAxes, ha="center")
    axis.legend(fontsize="small", loc="lower right")
