# SPDX-License-Identifier: Apache-2.0
"""The one step timer of every benchmark.

A step is timed from its start to the moment its loss can be read: reading
the loss waits for the step to finish on the device (GPU execution is
asynchronous). `timed_fit` times every step of a `fit` call through a
callback; `StepClock` alone times steps a benchmark runs itself
(`train_on_batch`). To compare models step for step, `TrainSteps` runs a
model's steps as `fit` does, `alternating_rounds` times several of them in
short rounds of a rotating order, and `paired_ratio` (from
`benchmarks.stats`, the one statistics implementation) compares two of
them round by round.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

# The comparison of rounds lives with the rest of the statistics.
from benchmarks.stats import PairedRatio, paired_ratio  # noqa: F401


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
