# SPDX-License-Identifier: Apache-2.0
"""The arguments of the Keras `fit` call a callback runs in.

Upstream surface: Keras 3's TensorFlow trainer `fit`
(keras/src/backend/tensorflow/trainer.py) builds its `CallbackList` inside
`fit` with `verbose`, `epochs` and `steps` only; the data and the validation
set stay locals of that frame (`x` after `validation_split` sliced it off,
`batch_size`, `steps_per_epoch`, `validation_data`). Keras 2's `fit` gave
callbacks `batch_size`, `samples`, `do_validation` and `metrics` as well
(keras/engine/training_arrays.py `fit_loop`, Keras 2.2.4 and 2.3.1), which
`parallel_keras.compat.Keras2Callback` rebuilds from these locals. Checked on
Keras 3.15.1 (TensorFlow 2.21); the local names are the same in Keras 3.5's
trainer. Canary: `tests/internals/test_fit_arguments.py`.
"""

from __future__ import annotations

import sys
from typing import Any

# The locals read, all set before `fit` makes its CallbackList.
FIT_LOCALS = ("x", "batch_size", "steps_per_epoch", "validation_data")


def fit_arguments(model: Any) -> dict[str, Any] | None:
    """The innermost running Keras `fit(...)` of `model`, as its locals.

    Args:
        model: The model the callback is set on.

    Returns:
        `FIT_LOCALS` of Keras's `fit` frame whose `self` is `model`, or
        `None` outside such a call (`evaluate`, `predict`, a callback list
        made by hand).
    """
    frame = sys._getframe(1)
    while frame is not None:
        local = frame.f_locals
        if (
            frame.f_code.co_name == "fit"
            and local.get("self") is model
            and all(name in local for name in FIT_LOCALS)
        ):
            return {name: local[name] for name in FIT_LOCALS}
        frame = frame.f_back  # type: ignore[assignment]
    return None
