# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `fit_generator(sequence, steps_per_epoch=N)`: N steps, cycling.

Keras 2 fed a `keras.utils.Sequence` through an enqueuer that cycled over it
for as long as training ran: `steps_per_epoch` alone decided an epoch's
length, and scripts often gave the Sequence a dummy `__len__` (1) or one
shorter than the steps they asked for. Keras 3 reads a `PyDataset` once per
epoch and stops when it runs out, so the same call trains fewer steps,
silently. `repeat_sequence` gives back Keras 2's stream: batch after batch of
the Sequence in order, continuing across epochs, with the Sequence's
`on_epoch_end` called after every full pass (as the enqueuer did).
`parallel-keras migrate` wraps such calls with it.
"""

from __future__ import annotations

from typing import Any

import keras


class _RepeatedSequence(keras.utils.PyDataset):
    """`steps` batches per epoch, read from `sequence` in a cycle."""

    def __init__(self, sequence: Any, steps: int):
        super().__init__()
        self._sequence = sequence
        self._steps = steps
        self._position = 0  # Batches served in earlier epochs.
        self._epochs_begun = 0

    def __len__(self) -> int:
        return self._steps

    def __getitem__(self, index: int):
        return self._sequence[(self._position + index) % len(self._sequence)]

    def on_epoch_begin(self) -> None:
        # Keras 3 calls `on_epoch_end` once more than there are epochs (when
        # it resets its iterator), but `on_epoch_begin` exactly once per epoch.
        self._epochs_begun += 1
        if self._epochs_begun == 1:
            return
        length = len(self._sequence)
        passes_before = self._position // length
        self._position += self._steps
        for _ in range(self._position // length - passes_before):
            if hasattr(self._sequence, "on_epoch_end"):
                self._sequence.on_epoch_end()


def repeat_sequence(sequence: Any, steps: int | None) -> Any:
    """Gives `sequence` exactly `steps` batches per epoch, cycling as Keras 2 did.

    Args:
        sequence: A `keras.utils.Sequence`/`PyDataset` (anything with
            `__len__` and `__getitem__`).
        steps: Batches per epoch (`steps_per_epoch` or `validation_steps`).
            None keeps `sequence` as it is (one pass per epoch).

    Returns:
        A `keras.utils.PyDataset` of `steps` batches, or `sequence` itself
        when `steps` is None.

    Raises:
        ValueError: If `steps` is not a positive integer, or `sequence` is
            empty.

    Example:

    >>> class Batches(keras.utils.PyDataset):
    ...     def __len__(self):
    ...         return 1
    ...     def __getitem__(self, index):
    ...         return [index]
    >>> len(repeat_sequence(Batches(), 5))
    5
    """
    if steps is None:
        return sequence
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(
            "repeat_sequence needs a positive whole number of steps per epoch. "
            f"Received: steps={steps!r}. Pass steps_per_epoch (or "
            "validation_steps) as an int >= 1, or None for one pass."
        )
    if len(sequence) < 1:
        raise ValueError(
            "repeat_sequence needs a sequence with at least one batch. Received: "
            f"a {type(sequence).__name__} of length {len(sequence)}. Fix its "
            "__len__."
        )
    return _RepeatedSequence(sequence, steps)
