# SPDX-License-Identifier: Apache-2.0
"""`--baseline`: compare a run with an earlier results file, flag regressions.

A run regresses when its throughput (samples/s) fell by more than the
threshold against the run with the same model, mode and replicas in the
baseline, or when it failed where the baseline measured it. Runs in only one
of the files are listed, not flagged. Compare files from the same machine:
the comparison warns when CPU count, GPUs or versions differ.
"""

from __future__ import annotations

import dataclasses

from benchmarks.suite.results import SuiteResults

DEFAULT_THRESHOLD = 0.2


@dataclasses.dataclass(frozen=True)
class Regression:
    """One run that got slower (or broke) against the baseline."""

    label: str
    baseline_samples_per_s: float
    samples_per_s: float | None

    @property
    def change(self) -> float | None:
        """Relative change of throughput (-0.3 = 30% slower); None if broken."""
        if self.samples_per_s is None:
            return None
        return self.samples_per_s / self.baseline_samples_per_s - 1

    def __str__(self) -> str:
        if self.samples_per_s is None:
            return f"{self.label}: failed (baseline {self.baseline_samples_per_s:.1f} samples/s)"
        return (
            f"{self.label}: {self.samples_per_s:.1f} samples/s vs "
            f"{self.baseline_samples_per_s:.1f} in the baseline ({self.change:+.0%})"
        )


@dataclasses.dataclass
class Comparison:
    """The outcome of `compare`. Its repr is the report."""

    threshold: float
    compared: int
    regressions: list[Regression]
    only_in_baseline: list[str]
    only_in_current: list[str]
    warnings: list[str]

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    def report(self) -> str:
        lines = [
            f"Baseline comparison: {self.compared} runs compared, "
            f"{len(self.regressions)} regression(s) over {self.threshold:.0%}."
        ]
        lines += [f"  REGRESSION {regression}" for regression in self.regressions]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        if self.only_in_baseline:
            lines.append(f"  not run this time: {', '.join(self.only_in_baseline)}")
        if self.only_in_current:
            lines.append(f"  new runs: {', '.join(self.only_in_current)}")
        return "\n".join(lines)

    __repr__ = report


def _key(run) -> tuple:
    return (run["model"], run["mode"], run["replicas"], run["global_batch_size"])


def _label(key) -> str:
    model, mode, replicas, batch = key
    return f"{model} {mode} x{replicas} (batch {batch})"


def compare(
    current: SuiteResults, baseline: SuiteResults, threshold: float = DEFAULT_THRESHOLD
) -> Comparison:
    """Compares `current` with `baseline`, run by run.

    Args:
        current: This run's results.
        baseline: An earlier run's results.
        threshold: Largest tolerated drop in samples/s, as a fraction.
            Defaults to 0.2 (20%: shared CI machines are noisy).

    Returns:
        A `Comparison`; `.regressed` is True when any run regressed.

    Raises:
        ValueError: If `threshold` is not in [0, 1).
    """
    if not 0 <= threshold < 1:
        raise ValueError(
            "The regression threshold is a fraction of the baseline "
            f"throughput in [0, 1). Received: threshold={threshold!r}. "
            "Example: 0.2 for 20%."
        )
    old = {_key(run): run for run in baseline.runs}
    new = {_key(run): run for run in current.runs}
    regressions, compared = [], 0
    for key in sorted(old.keys() & new.keys()):
        before = old[key].get("samples_per_s")
        if not before:
            continue
        compared += 1
        after = new[key].get("samples_per_s")
        if not after or after < before * (1 - threshold):
            regressions.append(Regression(_label(key), before, after or None))
    warnings = []
    old_machine = baseline.header.get("machine", {})
    new_machine = current.header.get("machine", {})
    for name in ("cpu_count", "gpus"):
        if old_machine.get(name) != new_machine.get(name):
            warnings.append(
                f"{name} differs: {old_machine.get(name)} in the baseline, "
                f"{new_machine.get(name)} now"
            )
    for name in ("tf_version", "keras_version"):
        if baseline.header.get(name) != current.header.get(name):
            warnings.append(
                f"{name} differs: {baseline.header.get(name)} in the baseline, "
                f"{current.header.get(name)} now"
            )
    return Comparison(
        threshold=threshold,
        compared=compared,
        regressions=regressions,
        only_in_baseline=[_label(key) for key in sorted(old.keys() - new.keys())],
        only_in_current=[_label(key) for key in sorted(new.keys() - old.keys())],
        warnings=warnings,
    )
