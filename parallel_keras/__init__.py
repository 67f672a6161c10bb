"""parallel_keras: legacy Keras multi-GPU training on modern TensorFlow.

The public API is what this module exports. Names load on first use, and
`import parallel_keras` imports neither TensorFlow nor Keras: the hooks that
restore a saved device placement on `keras.models.load_model` are installed
when the process imports Keras (see `parallel_keras._placement_hooks`), so
`parallel-keras --help`, `parallel-keras migrate` and the launcher start
fast, and run on a machine without TensorFlow.
"""

from __future__ import annotations

import importlib
# typing.TYPE_CHECKING without importing typing (milliseconds at start-up).
TYPE_CHECKING = False

from parallel_keras import _placement_hooks

__version__ = "0.1.0"

# name -> module that defines it.
_EXPORTS = {
    "simulate_devices": "parallel_keras.devices",
    "multi_gpu_model": "parallel_keras.data_parallel.multi_gpu_model",
    "ParallelModel": "parallel_keras.data_parallel.parallel_model",
    "quiet_tensorflow": "parallel_keras.quiet",
    # Saving, checkpoints and legacy files (issue 3) go below this line.
    "callbacks": "parallel_keras.callbacks",  # A submodule: the module itself.
    "ParallelModelCheckpoint": "parallel_keras.callbacks",
    "load_weights": "parallel_keras.saving.weights",
    "load_legacy_weights": "parallel_keras.saving.legacy",
    # Device placement (issue 4) goes below this line.
    "device": "parallel_keras.device_placement",
    "placement": "parallel_keras.device_placement",
    "place_branches": "parallel_keras.device_placement",
    "clear_placement": "parallel_keras.device_placement",
    "LayerCallPlacement": "parallel_keras.device_placement",
    # Multi-worker (issue 5) goes below this line.
    "write_path": "parallel_keras.cluster.writes",
    "BackupAndRestore": "parallel_keras.multi_worker.backup",
    "notebook_launcher": "parallel_keras.multi_worker.notebook",
}

__all__ = sorted(_EXPORTS)

# Subpackages documented by their dotted names (`parallel_keras.testing.
# record_op_devices()`) resolve after a bare `import parallel_keras`.
_SUBMODULES = frozenset({
    "data_parallel",
    "device_placement",
    "devices",
    "migrate",
    "multi_worker",
    "saving",
    "testing",
})

if TYPE_CHECKING:
    from parallel_keras.data_parallel.multi_gpu_model import multi_gpu_model
    from parallel_keras import callbacks
    from parallel_keras.callbacks import ParallelModelCheckpoint
    from parallel_keras.data_parallel.parallel_model import ParallelModel
    from parallel_keras.devices import simulate_devices
    from parallel_keras.quiet import quiet_tensorflow
    from parallel_keras.device_placement import LayerCallPlacement
    from parallel_keras.device_placement import clear_placement
    from parallel_keras.device_placement import device
    from parallel_keras.device_placement import place_branches
    from parallel_keras.device_placement import placement
    from parallel_keras.saving.legacy import load_legacy_weights
    from parallel_keras.saving.weights import load_weights
    from parallel_keras.multi_worker.backup import BackupAndRestore
    from parallel_keras.cluster.writes import write_path
    from parallel_keras.multi_worker.notebook import notebook_launcher


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'parallel_keras' has no attribute {name!r}")
    imported = importlib.import_module(module)
    # A submodule export ("callbacks") maps to the module itself.
    value = imported if module == f"{__name__}.{name}" else getattr(imported, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


# Not TensorFlow: only a finder that installs the placement hooks once Keras
# is imported (see `_placement_hooks` for why then).
_placement_hooks.install_when_keras_is_imported()
