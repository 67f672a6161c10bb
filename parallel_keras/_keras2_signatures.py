# SPDX-License-Identifier: Apache-2.0
"""Keras 2's signatures that both `migrate` and `compat` bind arguments to.

`parallel-keras migrate` passes a Keras 2 call's positional arguments by
keyword when it can see them; `parallel_keras.compat` binds them when the
call runs (a project's wrapper that forwards `*args`). Both must read the
same order, so it is written once, here. Standard library only: `migrate`
runs where TensorFlow is not installed.
"""

from __future__ import annotations

# Keras 2.3's `*_generator` training methods (keras/engine/training.py), in
# the order their positional arguments are read. Keras 2.2 had no
# validation_freq; a call with more than six positional arguments after the
# generator is read with Keras 2.3's order.
GENERATOR_METHODS: dict[str, tuple[str, ...]] = {
    "fit_generator": (
        "generator",
        "steps_per_epoch",
        "epochs",
        "verbose",
        "callbacks",
        "validation_data",
        "validation_steps",
        "validation_freq",
        "class_weight",
        "max_queue_size",
        "workers",
        "use_multiprocessing",
        "shuffle",
        "initial_epoch",
    ),
    "evaluate_generator": (
        "generator",
        "steps",
        "callbacks",
        "max_queue_size",
        "workers",
        "use_multiprocessing",
        "verbose",
    ),
    "predict_generator": (
        "generator",
        "steps",
        "callbacks",
        "max_queue_size",
        "workers",
        "use_multiprocessing",
        "verbose",
    ),
}
