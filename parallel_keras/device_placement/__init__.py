# SPDX-License-Identifier: Apache-2.0
"""Device placement: the branches of one functional model on different devices.

Modules:
* `scope`: `device(name)`, a `tf.device` that functional models remember.
* `runtime`: replays each recorded layer call on its device.
* `report`: `placement(model)`, the device each layer call asked for.
* `branches`: `place_branches(model, devices)`, automatic placement.
* `replicas`: a placed template inside `multi_gpu_model`'s replicas.
* `serialization`: placement kept in the `.keras` config.

Importing this package installs the hooks that make placement take effect
and survive loading. `import parallel_keras` does not import it: it is
imported when the process imports Keras (see `parallel_keras._placement_hooks`),
so a plain `keras.models.load_model` restores a saved placement without
TensorFlow being loaded at `import parallel_keras`.
"""

from __future__ import annotations

# Imported for the hooks they install: `scope` records each layer call's
# device as it is made, `runtime` replays it there, `serialization` keeps it
# through save and load.
from parallel_keras.device_placement import runtime as _runtime  # noqa: F401
from parallel_keras.device_placement import scope as _scope  # noqa: F401
from parallel_keras.device_placement import serialization as _serialization  # noqa: F401

# An internal package: its public names are exported by `parallel_keras`.
__all__: list[str] = []
