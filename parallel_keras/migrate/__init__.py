# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras migrate`: rewrite legacy Keras 2 multi-GPU scripts.

Built on LibCST, so comments and formatting survive. Never imports or runs
the scripts it reads, and never imports TensorFlow or Keras.

Example:

>>> from parallel_keras import migrate
>>> result = migrate.migrate_source(
...     "import keras\\nopt = keras.optimizers.Adam(lr=0.01)\\n")
>>> print(result.migrated, end="")
import keras
opt = keras.optimizers.Adam(learning_rate=0.01)
"""

from __future__ import annotations

from parallel_keras import _exports

# The exports are the imports of `__init__.pyi`, the one list of them.
__getattr__, __dir__, __all__ = _exports.attach_stub(__name__, __file__)
