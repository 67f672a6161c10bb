# SPDX-License-Identifier: Apache-2.0
"""What parallel_keras has changed in Keras and TensorFlow, for debugging.

Importing parallel_keras changes three things in Keras, once the process has
imported Keras too: `keras.src.models.model.Model.__init_subclass__` (added,
to recognize Keras 2's `ModelMGPU` wrapper class as it is defined),
`keras.src.ops.node.Node.__init__` (to record the `tf.device` scopes open
while a functional model is built) and
`keras.src.models.functional.functional_from_config` (to give a loaded model
its saved placement back). Every other change waits for the feature that
needs it (placing a layer call, `multi_gpu_model`, ...). These functions
list what is in place now.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parallel_keras._internals.interceptions import Interception

# Every change goes through this module; until it is imported nothing has
# been changed, and it is not imported here (it would import TensorFlow).
_REGISTRY = "parallel_keras._internals.interceptions"


def installed_interceptions() -> tuple[Interception, ...]:
    """The attributes of Keras/TensorFlow parallel_keras replaced, in order.

    Each entry has `target` (the dotted name replaced), `change`
    (`'wrapped'` or `'added'`), `by` (the parallel_keras module), `when`
    (at Keras import, or at the first use of which feature), `why`, and
    `how_to_remove`; `entry.remove()` puts back what Keras shipped.

    Returns:
        The entries, in the order they were installed; empty if nothing was
        replaced (then TensorFlow is not imported by this call).

    Example:

    >>> import keras, parallel_keras
    >>> targets = [e.target for e in parallel_keras.testing.installed_interceptions()]
    >>> "keras.src.ops.node.Node.__init__" in targets
    True
    """
    registry = sys.modules.get(_REGISTRY)
    if registry is None:
        return ()
    return registry.installed()


def describe_interceptions() -> str:
    """`installed_interceptions()` as text to print: what, by, when, why, how to remove.

    Returns:
        One paragraph per replaced attribute, or one line saying nothing
        was replaced.

    Example:

    >>> import keras, parallel_keras
    >>> print(parallel_keras.testing.describe_interceptions())  # doctest: +ELLIPSIS
    parallel_keras has replaced ... attribute(s) of Keras/TensorFlow:
    ...keras.src.ops.node.Node.__init__ (wrapped)
       by:     parallel_keras.device_placement.scope
       when:   once the process has imported both parallel_keras and Keras
    ...
    """
    registry = sys.modules.get(_REGISTRY)
    if registry is None:
        return "parallel_keras has replaced nothing in Keras or TensorFlow."
    return registry.describe()
