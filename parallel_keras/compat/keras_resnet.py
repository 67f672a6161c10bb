# SPDX-License-Identifier: Apache-2.0
"""keras-resnet 0.2.0 (a Keras 2 add-on package) on Keras 3.

keras-resnet 0.2.0 (2019, its last release) builds ResNet-18 to -200 from
its own blocks. Under Keras 3 every model fails as it is built
(`keras_resnet.models.ResNet50(inputs, include_top=False, freeze_bn=True)`
-> `TypeError: 'NoneType' object is not subscriptable` in
`BatchNormalization.build`): its `keras_resnet.layers.BatchNormalization`
(Keras's BatchNormalization with a `freeze` option) declares
`call(self, *args, **kwargs)`, and Keras 3 finds a layer's input shapes by
the name of `call`'s first argument, so it builds the layer with no shape.
Keras 2 passed the first argument as it was.

Importing this module gives that class Keras 2's call signature,
`call(inputs, training=None, mask=None)`, with the same body (a frozen
layer runs in inference mode; `trainable` is `not freeze`, as before). The
architecture, layer names and weights are keras-resnet's own, so its
ImageNet weight files load by name as under Keras 2. Only keras-resnet's
class is changed (keras-resnet 0.2.0 only: a class whose `call` already
names its input is left alone). Every name here is keras-resnet's own:
`from parallel_keras.compat.keras_resnet import models` gives
`keras_resnet.models`.

Modernise: `keras.applications.ResNet50(include_top=False,
input_tensor=inputs)` (the same architecture with biases in its
convolutions and other layer names, so keras-resnet weight files do not load
into it).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from typing import Any

from parallel_keras.compat import _aliases

_PACKAGE = "keras_resnet"
# A package path, so that `import parallel_keras.compat.keras_resnet.models`
# asks the alias finder (`_aliases`).
__path__: list[str] = []


def _fix() -> None:
    layers = importlib.import_module("keras_resnet.layers._batch_normalization")
    cls = layers.BatchNormalization
    parameters = list(inspect.signature(cls.call).parameters.values())
    if [p.kind for p in parameters[1:]] != [
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]:
        return  # Not 0.2.0's `call(self, *args, **kwargs)`.
    base = cls.__mro__[1]

    def call(self, inputs, training=None, mask=None):
        """keras-resnet's body with Keras 2's signature: a frozen layer runs in inference mode."""
        if self.freeze:
            training = False
        return base.call(self, inputs, training=training, mask=mask)

    call.__qualname__ = f"{cls.__qualname__}.call"
    cls.call = call


if importlib.util.find_spec(_PACKAGE) is not None:  # else: its names raise ImportError
    _fix()
_aliases.install(__name__, _PACKAGE)


def __getattr__(name: str) -> Any:
    return _aliases.package_attribute(_PACKAGE, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(importlib.import_module(_PACKAGE))))
