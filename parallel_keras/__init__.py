# SPDX-License-Identifier: Apache-2.0
"""parallel_keras: legacy Keras multi-GPU training on modern TensorFlow.

The public API is what this module exports, listed once in `__init__.pyi`
(the stub type checkers read; every public package exports this way, see
`_exports`). Names load on first use, and
`import parallel_keras` imports neither TensorFlow nor Keras: the three hooks a
legacy script needs (its `tf.device` scopes recorded, a saved device
placement restored on `keras.models.load_model`, Keras 2's `ModelMGPU`
wrapper class recognized as it is defined) are installed when the
process imports Keras (see `parallel_keras._placement_hooks`; everything
installed is listed by `parallel_keras.testing.describe_interceptions()`), so
`parallel-keras --help`, `parallel-keras migrate` and the launcher start
fast, and run on a machine without TensorFlow.
"""

from __future__ import annotations

import importlib

from parallel_keras import _environment, _exports, _placement_hooks

# The one source of the version: setup.cfg reads it (`version = attr:`,
# statically, without importing the package).
__version__ = "0.1.0"

# The exports are the imports of `__init__.pyi`, the one list of them.
_getattr_export, _dir_exports, __all__ = _exports.attach_stub(__name__, __file__)

# Subpackages documented by their dotted names (`parallel_keras.testing.
# record_op_devices()`) resolve after a bare `import parallel_keras`; they
# are not exports.
_SUBMODULES = frozenset(
    {
        "data_parallel",
        "device_placement",
        "devices",
        "migrate",
        "multi_worker",
        "saving",
        "testing",
    }
)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in __all__:
        # Before the export imports Keras: Keras on JAX, or tf.keras as Keras
        # 2, is refused with the rule and the fix, not a failure inside Keras.
        _environment.check_environment_variables()
    try:
        return _getattr_export(name)
    except AttributeError:
        raise AttributeError(f"module 'parallel_keras' has no attribute {name!r}") from None


def __dir__():
    # The public names only: not this module's own imports and helpers.
    return sorted({*__all__, "__version__"})


# Not TensorFlow: only a finder that installs the placement hooks once Keras
# is imported (see `_placement_hooks` for why then).
_placement_hooks.install_when_keras_is_imported()
