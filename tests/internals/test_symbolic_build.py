# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.symbolic_build` (Keras 3.5 to 3.15).

They fail loudly when the first-batch symbolic-build defect it works around
is fixed upstream (keras-team/keras#20585), so the workaround can go.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf


def test_upstream_symbolic_build_still_fails_on_uneven_batches():
    """When this starts failing, `symbolic_build`'s workaround can go."""
    assert hasattr(keras.Model, "_maybe_symbolic_build")
    assert hasattr(keras.Model, "_symbolic_build")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddN"):
        model.fit(np.ones((16, 2)), np.ones((16, 1)), batch_size=16, verbose=0)
