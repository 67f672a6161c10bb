"""parallel_keras: legacy Keras multi-GPU training on modern TensorFlow.

The public API is what this module exports. Names load on first use, so the
command-line tools that need no TensorFlow (`parallel-keras migrate`) start
without importing it.
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
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from parallel_keras.data_parallel.multi_gpu_model import multi_gpu_model
    from parallel_keras.data_parallel.parallel_model import ParallelModel
    from parallel_keras.devices import simulate_devices


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'parallel_keras' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
