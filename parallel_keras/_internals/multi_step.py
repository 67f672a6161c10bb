# SPDX-License-Identifier: Apache-2.0
"""Several steps per execution at an epoch's end.

Upstream surface: Keras 3 `TensorFlowTrainer._make_function` (3.7+) or
`make_train_function`'s `multi_step_on_iterator` (3.5-3.6)
(backend/tensorflow/trainer.py). Read in the Keras 3.5.0, 3.6.0, 3.7.0,
3.8.0, 3.10.0, 3.11.3 and 3.15.1 sources; the form is chosen once, at first
use. Canaries: `tests/internals/test_multi_step.py`.
"""

from __future__ import annotations

import functools

import keras

from parallel_keras._environment import keras_requirement

# --- Several steps per execution at an epoch's end ---------------------------
#
# `compile(steps_per_execution=N)` runs N steps in one traced function. Two
# upstream shapes, chosen once:
# 1. Keras 3.7+ (checked 3.8.0, 3.10.0, 3.11.3, 3.15.1):
#    `TensorFlowTrainer._make_function` loops over
#    `iterator.get_next_as_optional()` and stops at the data's end, so an
#    epoch of any length trains as one step at a time.
# 2. Keras 3.5-3.6 (checked 3.5.0): `make_train_function`'s
#    `multi_step_on_iterator` calls `next(iterator)` N times; an epoch whose
#    batches are not a multiple of N ends in an OutOfRange inside the
#    execution, and trains otherwise than one step at a time (one device
#    too: 18 optimizer steps for 15 batches, 3 epochs of 5 with N=3).
#    parallel_keras cannot change that loop from outside: refused at the
#    start of such a `fit`/`evaluate`, before any step.

MULTI_STEP_MIN_KERAS = (3, 7)


class StepsPerExecutionNeedsNewerKeras(RuntimeError):
    """This Keras runs several steps per execution past an epoch's end."""


@functools.cache
def stops_at_data_end() -> bool:
    from keras.src.backend.tensorflow import trainer

    return callable(getattr(trainer.TensorFlowTrainer, "_make_function", None))


def require_multi_step_support(iterator) -> None:
    """Raises `StepsPerExecutionNeedsNewerKeras` for an epoch this Keras's
    multi-step loop would run past (Keras 3.5-3.6 only)."""
    steps = int(getattr(iterator, "steps_per_execution", 1) or 1)
    if steps == 1 or stops_at_data_end():
        return
    batches = getattr(iterator, "num_batches", None)
    if batches is not None and batches % steps == 0:
        return
    epoch = "an unknown number of" if batches is None else str(batches)
    minimum = ".".join(map(str, MULTI_STEP_MIN_KERAS))
    raise StepsPerExecutionNeedsNewerKeras(
        "Several steps per execution (compile(steps_per_execution=N)) over an "
        "epoch whose batches are not a multiple of N need Keras "
        f"{minimum} or newer, the first whose multi-step loop stops at the "
        "end of the data; older Keras runs past it and trains otherwise than "
        f"one step at a time. Received: keras=={keras.__version__}, "
        f"steps_per_execution={steps}, {epoch} batches per epoch. Upgrade: "
        f"pip install {keras_requirement(MULTI_STEP_MIN_KERAS)}, or use a steps_per_execution "
        "that divides the batches of an epoch (or steps_per_epoch)."
    )
