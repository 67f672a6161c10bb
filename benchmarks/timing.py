"""The one step timer of every benchmark.

A step is timed from its start to the moment its loss can be read: reading
the loss waits for the step to finish on the device (GPU execution is
asynchronous). `timed_fit` times every step of a `fit` call through a
callback; `StepClock` alone times steps a benchmark runs itself
(`train_on_batch`). `paired_ratio` compares two approaches timed in
alternating rounds.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from typing import Any, NamedTuple


class StepClock:
    """Step times, in seconds, in the order the steps ran."""

    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self, loss: Any = None) -> None:
        if loss is not None:
            float(loss)  # Waits for the step.
        self.times.append(time.perf_counter() - self._start)


def timed_fit(model, *args, callbacks=(), **kwargs) -> tuple[Any, list[float]]:
    """`model.fit(*args, **kwargs)`, timing each step; returns (history, times)."""
    import keras  # pylint: disable=g-import-not-at-top

    clock = StepClock()

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            clock.start()

        def on_train_batch_end(self, batch, logs=None):
            clock.stop((logs or {}).get("loss"))

    history = model.fit(*args, callbacks=[*callbacks, StepTimer()], **kwargs)
    return history, clock.times


class PairedRatio(NamedTuple):
    """How much slower `a` ran than `b`, from rounds run side by side."""

    median: float
    """Median over rounds of (a's round median / b's round median)."""
    low: float
    high: float
    """A 95% bootstrap interval of that median."""


def paired_ratio(
    a_rounds: Sequence[float], b_rounds: Sequence[float], seed: int = 0,
    resamples: int = 2000,
) -> PairedRatio:
    """The median of per-round ratios a/b, with a 95% bootstrap interval.

    Rounds `a_rounds[i]` and `b_rounds[i]` ran next to each other, so their
    ratio cancels the machine's drift (other jobs, clock changes) that a
    ratio of pooled medians keeps; the interval says how far the noise left
    by that pairing could move the median.
    """
    if len(a_rounds) != len(b_rounds) or not a_rounds:
        raise ValueError(
            "paired_ratio needs one `b` round per `a` round, and at least one. "
            f"Received: {len(a_rounds)} and {len(b_rounds)} rounds."
        )
    ratios = [a / b for a, b in zip(a_rounds, b_rounds)]
    rng = random.Random(seed)
    medians = sorted(
        statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples)
    )
    return PairedRatio(
        statistics.median(ratios),
        medians[int(0.025 * (resamples - 1))],
        medians[int(0.975 * (resamples - 1))],
    )
