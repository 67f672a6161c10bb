"""Device placement: the branches of one functional model on different devices.

Modules:
* `scope`: `device(name)`, a `tf.device` that functional models remember.
* `runtime`: replays each recorded layer call on its device.
* `report`: `placement(model)`, the device each layer call asked for.
* `branches`: `place_branches(model, devices)`, automatic placement.
* `serialization`: placement kept in the `.keras` config.

Importing this package installs the hooks that make placement take effect
and survive loading.

Calling this package, `parallel_keras.placement(model)`, is the same as
calling `report.placement(model)` (see the note at the end of the file).
"""

from __future__ import annotations

import sys
import types

from parallel_keras.placement import serialization as _serialization  # noqa: F401  (installs the save/load hooks)
from parallel_keras.placement.branches import find_branches
from parallel_keras.placement.branches import place_branches
from parallel_keras.placement.report import LayerCallPlacement
from parallel_keras.placement.report import placement
from parallel_keras.placement.runtime import clear_placement
from parallel_keras.placement.scope import device

__all__ = [
    "LayerCallPlacement",
    "clear_placement",
    "device",
    "find_branches",
    "place_branches",
    "placement",
]


# The public function `parallel_keras.placement` shares its name with this
# package, and importing the package binds `parallel_keras.placement` to the
# package module (Python sets a submodule as an attribute of its parent).
# Making the package callable keeps `parallel_keras.placement(model)` working
# whichever of the two the name holds.
class _CallablePackage(types.ModuleType):
    def __call__(self, model):
        return placement(model)


sys.modules[__name__].__class__ = _CallablePackage
