"""The one step timer of every benchmark.

A step is timed from its start to the moment its loss can be read: reading
the loss waits for the step to finish on the device (GPU execution is
asynchronous). `timed_fit` times every step of a `fit` call through a
callback; `StepClock` alone times steps a benchmark runs itself
(`train_on_batch`).
"""

from __future__ import annotations

import time
from typing import Any


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
