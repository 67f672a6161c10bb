# SPDX-License-Identifier: Apache-2.0
"""`PARALLEL_KERAS_SIMULATE_DEVICES=N`: simulated devices for an unmodified script.

    PARALLEL_KERAS_SIMULATE_DEVICES=2 python train.py

runs a script written for a multi-GPU machine (`multi_gpu_model(model,
gpus=2)`, `with tf.device('/gpu:1')`) on a machine without GPUs, as if its
first line were `parallel_keras.simulate_devices(2)`. TensorFlow fixes its
devices the first time it uses them, so the variable is read when the
process has imported Keras and parallel_keras (whichever comes second; see
`_placement_hooks`), before the script runs its first TensorFlow operation,
and never in a process that does not import Keras (the CLI, the launcher).

Ignored, with a log line, on a machine with GPUs (the script has its
devices), and in a worker started by `parallel-keras launch` (the
launcher's `--devices-per-worker` decides there). A value that is not a
positive integer is reported as a `RuntimeWarning` (an import must not fail
because of it), and the script then fails where it asks for the devices,
with an error naming this variable.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

SIMULATE_DEVICES_ENV = "PARALLEL_KERAS_SIMULATE_DEVICES"
EXAMPLE = f"{SIMULATE_DEVICES_ENV}=2 python train.py"
# Set by `parallel-keras launch` in each worker (multi_worker/worker_env.py).
_LAUNCHED_WORKER_ENV = "PARALLEL_KERAS_DEVICES_PER_WORKER"

_state = {"applied": False}


def requested(environ: Mapping[str, str] | None = None) -> int | None:
    """The number of devices the variable asks for, or None when it is unset or empty.

    Raises:
        ValueError: If the value is not a positive integer.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(SIMULATE_DEVICES_ENV, "").strip()
    if not raw:
        return None
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(
            f"{SIMULATE_DEVICES_ENV} must be a positive number of devices to "
            f"simulate. Received: {SIMULATE_DEVICES_ENV}={raw!r}. Set e.g. {EXAMPLE}, "
            "or unset it."
        )
    return count


def apply() -> None:
    """Simulates the devices the variable asks for, once per process.

    Called when Keras is fully imported. Never raises: a problem is a
    `RuntimeWarning`, and the device request that cannot be met fails with
    its own error.
    """
    if _state["applied"]:
        return
    _state["applied"] = True
    try:
        count = requested()
    except ValueError as error:
        warnings.warn(str(error), RuntimeWarning, stacklevel=2)
        return
    if count is None:
        return
    from absl import logging

    if os.environ.get(_LAUNCHED_WORKER_ENV):
        logging.info(
            "%s ignored in a worker of `parallel-keras launch`: "
            "--devices-per-worker decides its devices.",
            SIMULATE_DEVICES_ENV,
        )
        return
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        logging.info("%s ignored: this machine has GPUs.", SIMULATE_DEVICES_ENV)
        return
    from parallel_keras import devices

    try:
        devices.simulate_devices(count)
    except RuntimeError as error:
        warnings.warn(
            f"{SIMULATE_DEVICES_ENV}={count} came too late: TensorFlow had already "
            f"initialized its devices. Received: {error} Import keras or "
            "parallel_keras before the script's first TensorFlow operation.",
            RuntimeWarning,
            stacklevel=2,
        )
