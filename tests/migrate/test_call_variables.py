# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/call_variables.py: a tf.Variable made in a layer's call, made once."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import call_variables
from tests.migrate.helpers import changes

# A YOLO-style loss layer's warm-up counter (experiencor/keras-yolo3's idiom).
_SCRIPT = """\
import numpy as np
import keras
import tensorflow as tf


class Warmup(keras.layers.Layer):
    def call(self, x):
        # the variable to keep track of number of batches processed
        batch_seen = tf.Variable(0.)
        batch_seen = tf.compat.v1.assign_add(batch_seen, 1.)
        scale = tf.cond(tf.less(batch_seen, 2.5), lambda: 0.0, lambda: 1.0)
        return x * scale


inputs = keras.Input((2,))
layer = Warmup()
model = keras.Model(inputs, keras.layers.Dense(1, kernel_initializer='ones')(layer(inputs)))
model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse')
model.fit(np.ones((12, 2), 'float32'), np.zeros((12, 1), 'float32'), batch_size=4, verbose=0,
          shuffle=False)
"""


def test_a_variable_made_in_call_is_made_once_and_counts_every_step():
    namespace: dict = {}
    with pytest.raises(ValueError):  # tf.function refuses a variable made on a later call.
        exec(_SCRIPT, namespace)  # noqa: S102
    result = migrate.migrate_source(_SCRIPT)
    assert [line for line, _ in changes(result, call_variables.RULE)] == [9]
    assert "self._batch_seen_variable = tf.Variable(0.)" in result.migrated
    assert migrate.migrate_source(result.migrated).migrated == result.migrated
    exec(result.migrated, namespace)  # noqa: S102
    # Keras 2: one variable, incremented once per batch (3 batches).
    assert float(namespace["layer"]._batch_seen_variable.numpy()) == 3.0
    # Batches 1-2 are scaled by 0 (no gradient); batch 3 predicts 2 for a target
    # of 0: d(mse)/dk = 2 * 2 * x = 4, so k = 1 - 0.1 * 4.
    kernel = namespace["model"].get_weights()[0]
    np.testing.assert_allclose(kernel, np.full((2, 1), 0.6), rtol=1e-6)
    assert len(namespace["model"].weights) == 2  # Not a weight, as in Keras 2.
