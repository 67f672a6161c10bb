# SPDX-License-Identifier: Apache-2.0
"""The one step timer of every benchmark.

A step is timed from its start to the moment its loss can be read: reading
the loss waits for the step to finish on the device (GPU execution is
asynchronous). `timed_fit` times every step of a `fit` call through a
callback; `StepClock` alone times steps a benchmark runs itself
(`train_on_batch`). To compare models step for step, `TrainSteps` runs a
model's steps as `fit` does, `alternating_rounds` times several of them in
short rounds of a rotating order, and `paired_ratio` compares two of them
round by round.
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
    import keras

    clock = StepClock()

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            clock.start()

        def on_train_batch_end(self, batch, logs=None):
            clock.stop((logs or {}).get("loss"))

    history = model.fit(*args, callbacks=[*callbacks, StepTimer()], **kwargs)
    return history, clock.times


class TrainSteps:
    """Runs one model's training steps as `fit` does, one call per step.

    `fit` is called first (it builds the model and its train function);
    then each step is the train function `fit` calls once per step, on the
    model's own distributed batches of `dataset`. This leaves out `fit`'s
    per-call set-up (input iterators, callbacks), which moves step times by
    far more than a few percent between calls.
    """

    def __init__(self, model, dataset, warmup_steps: int = 3):
        model.fit(dataset, epochs=1, steps_per_epoch=max(1, warmup_steps), verbose=0)
        model.make_train_function()
        self._function = model.train_function
        strategy = model.distribute_strategy
        self._batches = iter(strategy.experimental_distribute_dataset(dataset))
        for _ in range(warmup_steps):
            float(self._function(self._batches)["loss"])

    def median_step(self, steps: int) -> float:
        """The median time of the next `steps` steps, in seconds."""
        clock = StepClock()
        for _ in range(steps):
            clock.start()
            clock.stop(self._function(self._batches)["loss"])
        return statistics.median(clock.times)


def alternating_rounds(
    runs: dict[str, TrainSteps], rounds: int, steps: int
) -> dict[str, list[float]]:
    """Each run's median step per round; the order rotates every round."""
    names = list(runs)
    medians: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            medians[name].append(runs[name].median_step(steps))
    return medians


class PairedRatio(NamedTuple):
    """How much slower `a` ran than `b`, from rounds run side by side."""

    median: float
    """Median over rounds of (a's round median / b's round median)."""
    low: float
    high: float
    """A 95% bootstrap interval of that median."""


def paired_ratio(
    a_rounds: Sequence[float],
    b_rounds: Sequence[float],
    seed: int = 0,
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
