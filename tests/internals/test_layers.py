# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.layers` (Keras 3.5 to 3.15)."""

import keras

from parallel_keras._internals import layers


def test_child_layers_of_a_model_and_of_a_wrapper_layer():
    inner = keras.layers.LSTM(2)
    wrapper = keras.layers.Bidirectional(inner)
    model = keras.Sequential([keras.Input((3, 2)), wrapper])
    assert layers.child_layers(model) == [wrapper]
    # Keras tracks a wrapper's sublayers only privately (`Layer._layers`).
    assert len(layers.child_layers(wrapper)) == 2
    assert all(isinstance(child, keras.layers.LSTM) for child in layers.child_layers(wrapper))
