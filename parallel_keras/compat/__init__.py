# SPDX-License-Identifier: Apache-2.0
"""Keras 2 and TF1 code paths that run on Keras 3, for migrated scripts.

`parallel-keras migrate` rewrites a Keras 2 name to its Keras 3 twin when
one has the same meaning. Where none does, it rewrites onto this module,
whose names keep Keras 2's meaning: `K.function`, `model.add_loss(<tensor>)`,
`save_weights`/`load_weights` to any path in Keras 2's HDF5 layout,
`K.set_session`/`K.get_session`, TF1 graph helpers (`tf1_graph`), Keras 2's
preprocessing from the `tf_keras` package (`ImageDataGenerator`,
`Tokenizer`, `TimeseriesGenerator`, ...; `pip install
'parallel-keras[keras2]'`) and the private helpers projects imported
(`conv_utils`, `generic_utils`, `Merge` for `_Merge`, `Container`) and
`Keras2Weights`, which makes a layer subclass save all its weights.

Each name says what it does and how to modernise it; the migrate report
lists every line that runs through here with its modern form.
"""

from __future__ import annotations

from parallel_keras import _exports

# The exports are the imports of `__init__.pyi`, the one list of them.
__getattr__, __dir__, __all__ = _exports.attach_stub(__name__, __file__)
