# SPDX-License-Identifier: Apache-2.0
"""A backup or checkpoint never replaces a finite state with a non-finite one.

One row holding NaN (or a learning rate that overflows) turns the loss and
then every weight into NaN. A callback that writes that state over the last
good backup loses the only state worth resuming from. So each write first
checks the step's logged loss and the very arrays it is about to write; a
non-finite state is not written, the last finite file stays, and the
callback says so once per `fit`.

The check is at the write, not in the callback order: Keras's
`TerminateOnNaN` placed after a backup only stops training after the backup
ran, and one placed before it stops the epoch loop but `on_epoch_end` still
runs. Checking the state itself holds in every order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from absl import logging


def non_finite_loss(logs: Mapping[str, Any] | None) -> float | None:
    """The logged `loss` when it is NaN or infinite, else None."""
    if not logs or "loss" not in logs:
        return None
    try:
        loss = float(np.asarray(logs["loss"]))
    except (TypeError, ValueError):
        return None
    return None if math.isfinite(loss) else loss


def first_non_finite(arrays: Iterable[tuple[str, Any]]) -> str | None:
    """The name of the first floating-point array holding NaN or inf, or None."""
    for name, value in arrays:
        array = np.asarray(value)
        if np.issubdtype(array.dtype, np.floating) or np.issubdtype(
            array.dtype, np.complexfloating
        ):
            if not np.isfinite(array).all():
                return name
        elif array.dtype.kind == "V":  # bfloat16 and other extension floats.
            with np.errstate(all="ignore"):
                if not np.isfinite(array.astype(np.float32)).all():
                    return name
    return None


class FiniteGuard:
    """Refuses non-finite states for one callback; warns once per `fit`.

    Args:
        what: What the callback writes, for the warning ("backup",
            "checkpoint").
    """

    def __init__(self, what: str):
        self.what = what
        self.refused = 0
        self._warned = False

    def reset(self) -> None:
        """Called when training begins."""
        self.refused = 0
        self._warned = False

    def refuses(
        self,
        logs: Mapping[str, Any] | None,
        arrays: Iterable[tuple[str, Any]],
        target: str,
        when: str,
    ) -> bool:
        """True (and a warning, the first time) if the state is not finite.

        Args:
            logs: The step's logs; a NaN or infinite `loss` is refused
                without reading the arrays.
            arrays: `(name, array)` pairs about to be written.
            target: The file that keeps its last finite content.
            when: Where training is ("epoch 2 batch 3").
        """
        loss = non_finite_loss(logs)
        reason = f"the loss is {loss}" if loss is not None else None
        if reason is None:
            name = first_non_finite(arrays)
            reason = None if name is None else f"{name} holds NaN or inf"
        if reason is None:
            return False
        self.refused += 1
        if not self._warned:
            self._warned = True
            logging.warning(
                "parallel_keras: a %s never replaces a finite state with a "
                "non-finite one: at %s %s, so %s keeps the last finite state "
                "(this run writes no non-finite %s; said once). Find the "
                "NaN or inf in the input rows, lower the learning rate, or add "
                "keras.callbacks.TerminateOnNaN() to stop at the first one.",
                self.what,
                when,
                reason,
                target,
                self.what,
            )
        return True
