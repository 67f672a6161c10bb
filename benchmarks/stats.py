# SPDX-License-Identifier: Apache-2.0
"""The one statistics implementation of every benchmark.

Every comparison a benchmark prints is of two things measured side by side
(A B A B ..., in rounds), so that drift of the machine (other jobs, clock
changes) moves both alike. A comparison is the median over rounds of the
per-round ratio, with a 95% bootstrap interval (`scipy.stats.bootstrap`,
percentile method, resampling the paired rounds). Beside it stands an A/A
control: the same configuration measured twice in the same rounds, whose
ratio shows what noise alone makes of two identical things.

The bootstrap interval of a ratio treats its rounds as independent draws,
so it says how precisely *this* run located the median, not how far a
second run on the same machine may land (issue 32: two `--quick` runs under
changing load gave 1.36 [1.29, 1.45] and 1.21 [1.17, 1.29]). The A/A
control shows what noise alone does to a ratio of two identical things in
this run, so every printed interval is the ratio's own widened by the
control's noise (`with_control`: each bound moved out by the fraction the
control reaches from 1). It is still a within-run figure: a load that
changes between runs can move a ratio further.

`verdict` turns a ratio and its control into what a reader may conclude:
a ratio whose widened interval includes 1, or whose distance from 1 is no
larger than the control's, is "no difference measured".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

CONFIDENCE = 0.95
RESAMPLES = 2000
NO_DIFFERENCE = "no difference measured"


class PairedRatio(NamedTuple):
    """A median with its 95% bootstrap interval (`low`, `high`)."""

    median: float
    low: float
    high: float

    @property
    def includes_one(self) -> bool:
        return self.low <= 1.0 <= self.high

    @property
    def spread(self) -> float:
        """How far the interval reaches from 1, in either direction."""
        return max(abs(self.low - 1.0), abs(self.high - 1.0))

    def scaled(self, factor: float) -> PairedRatio:
        return PairedRatio(self.median * factor, self.low * factor, self.high * factor)

    def inverse(self) -> PairedRatio:
        """1 / the ratio (step-time ratios become throughput ratios)."""
        return PairedRatio(1 / self.median, 1 / self.high, 1 / self.low)

    def __str__(self) -> str:
        return f"{self.median:.3f} [{self.low:.3f}, {self.high:.3f}]"


# The interval of a single value: nothing is known about its noise.
_UNKNOWN = (0.0, math.inf)


def median_interval(values: Sequence[float], seed: int = 0) -> PairedRatio:
    """The median of `values` with a 95% bootstrap interval.

    Fewer than two values have no interval: (0, inf).
    """
    if not values:
        raise ValueError("median_interval needs at least one value. Received: 0 values.")
    median = statistics.median(values)
    if len(values) < 2:
        return PairedRatio(median, *_UNKNOWN)
    if min(values) == max(values):
        return PairedRatio(median, median, median)
    import numpy as np
    from scipy import stats

    result = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        np.median,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return PairedRatio(median, float(interval.low), float(interval.high))


def paired_ratio(
    a_rounds: Sequence[float],
    b_rounds: Sequence[float],
    seed: int = 0,
) -> PairedRatio:
    """The median of per-round ratios a/b, with a 95% bootstrap interval.

    Rounds `a_rounds[i]` and `b_rounds[i]` ran next to each other, so their
    ratio cancels the machine's drift that a ratio of pooled medians keeps;
    the interval says how far the noise left by that pairing could move the
    median.

    Raises:
        ValueError: If the two lists differ in length or are empty.
    """
    if len(a_rounds) != len(b_rounds) or not a_rounds:
        raise ValueError(
            "paired_ratio needs one `b` round per `a` round, and at least one. "
            f"Received: {len(a_rounds)} and {len(b_rounds)} rounds."
        )
    return median_interval([a / b for a, b in zip(a_rounds, b_rounds)], seed=seed)


def with_control(ratio: PairedRatio, control: PairedRatio | None) -> PairedRatio:
    """`ratio`'s interval widened by the A/A control's noise: what another run may show.

    The control is one configuration against itself, ideally 1.0 [1.0, 1.0];
    its `spread` (how far its interval reaches from 1) is the fraction by
    which noise alone moved a ratio in this run, the "+-x% are noise" of
    `noise_line`. Both bounds of `ratio` move out by that fraction. Without a
    control, or one with no interval, `ratio` is returned unchanged.
    """
    if control is None or not math.isfinite(control.high):
        return ratio
    return PairedRatio(
        ratio.median,
        ratio.low * (1.0 - control.spread),
        ratio.high * (1.0 + control.spread),
    )


def differs(ratio: PairedRatio, control: PairedRatio | None) -> bool:
    """Whether `ratio` shows a difference its own noise and the control's cannot.

    It does not when its interval, widened by the control's (`with_control`),
    includes 1, or when its distance from 1 is no larger than the A/A
    control's interval reaches from 1.
    """
    if with_control(ratio, control).includes_one:
        return False
    return control is None or abs(ratio.median - 1.0) > control.spread


def verdict(ratio: PairedRatio | None, control: PairedRatio | None, digits: int = 2) -> str:
    """`ratio` as a reader may use it: the figure, or "no difference measured"."""
    if ratio is None:
        return "-"
    if not differs(ratio, control):
        return NO_DIFFERENCE
    shown = with_control(ratio, control)
    return f"{shown.median:.{digits}f} [{shown.low:.{digits}f}, {shown.high:.{digits}f}]"


def noise_line(label: str, control: PairedRatio) -> str:
    """One line saying how much noise an A/A control measured."""
    if math.isinf(control.high):
        return f"{label}: A/A control {control.median:.3f}, too few rounds for an interval"
    return (
        f"{label}: A/A control {control} -> differences within "
        f"+-{control.spread:.1%} are noise in this run"
    )
