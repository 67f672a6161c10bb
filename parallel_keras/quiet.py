# SPDX-License-Identifier: Apache-2.0
"""`quiet_tensorflow()`: TensorFlow without its start-up and INFO logging.

On a machine without a GPU, importing TensorFlow 2.21 prints C++ lines
("Could not find cuda drivers", oneDNN notes, and at ERROR level "failed
call to cuInit") although nothing is wrong, and tf.distribute logs each
reduction at INFO ("Reduce to ... then broadcast to ..."). Entry points (the
`parallel-keras` commands, notebooks, scripts) call this first; the library
itself never changes logging.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys


@contextlib.contextmanager
def _stderr_to_devnull():
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def quiet_tensorflow(verbose: bool = False) -> None:
    """Imports TensorFlow with its C++ start-up logging and INFO logs off.

    Sets `TF_CPP_MIN_LOG_LEVEL` to 3 (fatal only; a value already set is
    kept), imports TensorFlow with file descriptor 2 sent to /dev/null, and
    sets its Python logger to WARNING (its first use sets INFO in Jupyter).
    The descriptor is redirected because TF 2.19-2.21 log their import-time
    lines before absl::InitializeLog, where `TF_CPP_MIN_LOG_LEVEL` does not
    apply (tensorflow/tensorflow#100442). An import error is still raised,
    and Python prints it after the descriptor is restored. Call it before
    anything imports TensorFlow; later, only the logger level changes.

    Args:
        verbose: Turn TensorFlow's logging fully on instead (level 0, INFO),
            e.g. for a `-v` flag. Defaults to False.

    Example:

    >>> import parallel_keras
    >>> parallel_keras.quiet_tensorflow()  # First line of a notebook or script.
    """
    if verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        tensorflow = importlib.import_module("tensorflow")
        tensorflow.get_logger().setLevel(logging.INFO)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "tensorflow" in sys.modules:
        tensorflow = importlib.import_module("tensorflow")
        if not _said:
            _said.add("too late")
            from absl import logging as absl_logging

            absl_logging.warning(TOO_LATE)
    else:
        with _stderr_to_devnull():
            tensorflow = importlib.import_module("tensorflow")
        _said.add("imported quietly")
    # After `get_logger()` has run: in an interactive session (IPython,
    # Jupyter) its first call sets the logger to INFO, printing to stdout.
    tensorflow.get_logger().setLevel(logging.WARNING)


TOO_LATE = (
    "quiet_tensorflow() was called after TensorFlow was imported, so it cannot "
    "quiet TensorFlow's start-up: those lines are printed while TensorFlow is "
    "imported, and TF_CPP_MIN_LOG_LEVEL is read then. Only TensorFlow's Python "
    "logger was set to WARNING. Received: 'tensorflow' already imported (by "
    "`import tensorflow` or `import keras` above the call). Make "
    "`import parallel_keras; parallel_keras.quiet_tensorflow()` the first lines "
    "of the script or notebook, before any TensorFlow or Keras import."
)
# Once per process: the warning, or the quiet import that makes it moot.
_said: set[str] = set()
