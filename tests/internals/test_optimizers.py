"""Canaries for `parallel_keras._internals.optimizers` (TF 2.21 / Keras 3.15).

They fail loudly when an upgrade changes how a Keras optimizer finds the
variables it was built for.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import _internals


def test_relocated_variables_are_unknown_until_the_optimizer_is_rekeyed():
    variable = keras.Variable(np.ones(2, "float32"))
    optimizer = keras.optimizers.Adam(0.1)
    optimizer.build([variable])
    optimizer.apply_gradients([(tf.ones(2), variable)])
    momentum = [v.numpy() for v in optimizer.variables]
    assert _internals.optimizer_built_variables(optimizer) == [variable]
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _internals.relocate_variables([variable], strategy)
    with pytest.raises(ValueError, match="Unknown variable"):
        optimizer.apply_gradients([(tf.ones(2), variable)])
    _internals.rekey_optimizer_variables(optimizer)
    assert list(_internals.optimizer_variable_keys(optimizer).values()) == [0]
    for before, after in zip(momentum, optimizer.variables):
        np.testing.assert_array_equal(before, after.numpy())
