# SPDX-License-Identifier: Apache-2.0
"""Keras's step functions: which steps a model uses, the traced functions it
caches, and `fit` resumed mid-run.

Upstream surface: Keras 3 `TensorFlowTrainer` (backend/tensorflow/trainer.py:
`train_step`/`test_step`/`predict_step`, `train_function` & co. cached by
`make_train_function`) and `Trainer._initial_epoch` (trainers/trainer.py).
The same on Keras 3.5.0 to 3.15.1 (read in 3.5.0, 3.8.0, 3.10.0, 3.11.3,
3.15.1). Canaries: `tests/internals/test_compiled_functions.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

# `TensorFlowTrainer.train_step` & co. (Keras 3.15) are the steps a model
# uses unless its class overrides them.


def is_keras_default_step(model_class: type, name: str) -> bool:
    from keras.src.backend.tensorflow import trainer

    return getattr(model_class, name) is getattr(trainer.TensorFlowTrainer, name)


def reset_compiled_functions(model: keras.Model) -> None:
    """Drops a model's traced train/test/predict functions.

    Keras caches them on the model (`make_train_function` returns the cached
    one); after the strategy or variables behind a model change they must be
    traced again.
    """
    model.train_function = None
    model.test_function = None
    model.predict_function = None


# `multi_worker.BackupAndRestore` resumes a restarted run where its last
# backup left it: at a later epoch and, with a batch-level
# `save_freq`, mid-epoch. Keras 3.15 `fit` has no public argument a callback
# can set for either. Two touches, checked on TF 2.21 / Keras 3.15:
# 1. `Trainer._initial_epoch` (trainers/trainer.py): the TF trainer's `fit`
#    starts at `self._initial_epoch or initial_epoch`, read after
#    `on_train_begin`; Keras's own BackupAndRestore sets it the same way and
#    never resets it, so a later `fit` would start late: we reset it.
# 2. `model.train_function` (backend/tensorflow/trainer.py): `fit` builds it
#    before `on_train_begin` and calls `self.train_function(iterator)` once
#    per step (`steps_per_execution` batches); replacing it for the first
#    steps of the resumed epoch with one that only takes the batches off the
#    iterator skips them without training, so the data lines up with the
#    state restored.


def set_initial_epoch(model: keras.Model, epoch: int | None) -> None:
    """Makes the next (or running) `fit` of `model` start at `epoch`."""
    model._initial_epoch = epoch


def skip_train_steps(model: keras.Model, steps: int) -> None:
    """Makes the next `steps` training steps of `fit` consume data only."""
    original = model.train_function
    if steps <= 0 or original is None:
        return
    batches_per_step = int(getattr(model, "steps_per_execution", 1) or 1)
    remaining = [steps]

    def skip_then_train(iterator):
        if remaining[0] <= 0:
            return original(iterator)
        remaining[0] -= 1
        if remaining[0] == 0:
            model.train_function = original
        for _ in range(batches_per_step):
            next(iterator)
        return {}

    model.train_function = skip_then_train


def skip_train_rows(
    model: keras.Model,
    rows: int,
    batch_rows: Callable[[object], int],
    done: Callable[[int, int], None],
) -> None:
    """Makes the next training steps of `fit` consume `rows` rows, untrained.

    As `skip_train_steps`, counting rows instead of steps, so a run resumed
    with another batch size skips what was trained. Each skipped
    step takes `steps_per_execution` batches; `batch_rows(batch)` counts a
    batch's rows. Once at least `rows` rows were taken, `done(rows_taken,
    batches_taken)` is called and training goes on.
    """
    original = model.train_function
    if rows <= 0 or original is None:
        return
    batches_per_step = int(getattr(model, "steps_per_execution", 1) or 1)
    taken = [0, 0]

    def skip_then_train(iterator):
        for _ in range(batches_per_step):
            taken[0] += batch_rows(next(iterator))
            taken[1] += 1
        if taken[0] >= rows:
            model.train_function = original
            done(*taken)
        return {}

    model.train_function = skip_then_train
