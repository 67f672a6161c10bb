"""parallel_keras: legacy Keras multi-GPU training on modern TensorFlow.

The public API is what this module exports. Names load on first use; the one
thing done on import is installing the hooks that restore a saved device
placement (which imports TensorFlow when it is installed). Without TensorFlow
the package still imports, so `parallel-keras migrate` runs on a machine that
has none.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# name -> module that defines it.
_EXPORTS = {
    "simulate_devices": "parallel_keras.devices",
    "multi_gpu_model": "parallel_keras.data_parallel.multi_gpu_model",
    "ParallelModel": "parallel_keras.data_parallel.parallel_model",
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
    "write_path": "parallel_keras.multi_worker.writes",
    "BackupAndRestore": "parallel_keras.multi_worker.backup",
    "notebook_launcher": "parallel_keras.multi_worker.notebook",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from parallel_keras.data_parallel.multi_gpu_model import multi_gpu_model
    from parallel_keras import callbacks
    from parallel_keras.callbacks import ParallelModelCheckpoint
    from parallel_keras.data_parallel.parallel_model import ParallelModel
    from parallel_keras.devices import simulate_devices
    from parallel_keras.device_placement import LayerCallPlacement
    from parallel_keras.device_placement import clear_placement
    from parallel_keras.device_placement import device
    from parallel_keras.device_placement import place_branches
    from parallel_keras.device_placement import placement
    from parallel_keras.saving.legacy import load_legacy_weights
    from parallel_keras.saving.weights import load_weights
    from parallel_keras.multi_worker.backup import BackupAndRestore
    from parallel_keras.multi_worker.writes import write_path
    from parallel_keras.multi_worker.notebook import notebook_launcher


def __getattr__(name: str):
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


def _install_placement_hooks() -> None:
    """Lets `keras.models.load_model` restore a saved device placement.

    Placement is stored in the model config; the hooks that read it back must
    be in place before a model is loaded, so they are installed on import.
    Without TensorFlow (e.g. `parallel-keras migrate` on a machine without
    it) there is nothing to hook.
    """
    try:
        importlib.import_module("parallel_keras.device_placement")
    except ImportError:
        pass


_install_placement_hooks()
