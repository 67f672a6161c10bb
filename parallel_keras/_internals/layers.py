# SPDX-License-Identifier: Apache-2.0
"""Sublayers of a layer.

Upstream surface: Keras 3 `Layer._layers` (layers/layer.py, the tracker's
"layers" collection), the same on Keras 3.5.0 to 3.15.1. Canary:
`tests/internals/test_layers.py`.
"""

from __future__ import annotations

import keras

# --- Sublayers of a layer ------------------------------------------------------
#
# A model lists its layers (`Model.layers`); any other layer holding layers
# (a wrapper such as `Bidirectional`, a custom layer with layer attributes)
# lists them only in Keras's private `Layer._layers` (layers/layer.py, the
# tracker's "layers" collection; the same on Keras 3.5 to 3.15).


def child_layers(layer: keras.layers.Layer) -> list:
    """The layers directly inside `layer` (a model's `layers`, else Keras's
    tracked sublayers)."""
    return list(getattr(layer, "layers", None) or getattr(layer, "_layers", None) or [])
