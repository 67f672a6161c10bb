# SPDX-License-Identifier: Apache-2.0
"""Device placement: the branches of one functional model on different devices.

Modules:
* `scope`: `device(name)`, a `tf.device` that functional models remember.
* `runtime`: replays each recorded layer call on its device.
* `report`: `placement(model)`, the device each layer call asked for.
* `branches`: `place_branches(model, devices)`, automatic placement.
* `replicas`: a placed template inside `multi_gpu_model`'s replicas.
* `serialization`: placement kept in the `.keras` config.

Importing this package installs the two hooks a legacy script needs with
one import changed: `scope` records the device scope open as each layer
call is made (`Node.__init__`), `serialization` restores a saved placement
on load (`functional_from_config`). `import parallel_keras` does not import
it: it is imported when the process imports Keras (see
`parallel_keras._placement_hooks`), so a plain `keras.models.load_model`
restores a saved placement without TensorFlow being loaded at
`import parallel_keras`. `runtime` installs the hooks that replay a call on
its device and write the placement into a saved config when the first layer
call is given a device. `parallel_keras._internals.interceptions` lists all.
"""

from __future__ import annotations

# Imported for the hooks they install at once: `scope` records each layer
# call's device as it is made, `serialization` restores it on load.
from parallel_keras.device_placement import scope as _scope  # noqa: F401
from parallel_keras.device_placement import serialization as _serialization  # noqa: F401

# An internal package: its public names are exported by `parallel_keras`.
__all__: list[str] = []
