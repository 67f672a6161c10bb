# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.logits` (Keras 3.5 to 3.15).

Each fails loudly when an upgrade changes how Keras's crossentropies find
the logits behind a sigmoid or softmax output.
"""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.tensorflow import nn as keras_tf_nn

from parallel_keras import _internals

LOGITS = np.array([[30.0, -30.0, 0.5], [-25.0, 2.0, 40.0]], "float32")
TARGETS = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], "float32")


def test_keras_reads_logits_from_the_attribute_or_the_op():
    """`_get_logits` still reads `_keras_logits`, then the op type."""
    source = inspect.getsource(keras_tf_nn._get_logits)
    assert "_keras_logits" in source and "op.type == op_type" in source
    for name, op_type in (
        ("binary_crossentropy", "Sigmoid"),
        ("categorical_crossentropy", "Softmax"),
        ("sparse_categorical_crossentropy", "Softmax"),
    ):
        assert f'"{op_type}"' in inspect.getsource(getattr(keras_tf_nn, name)), name


@pytest.mark.parametrize(
    "activation", [keras.activations.sigmoid, keras.activations.softmax, tf.nn.sigmoid]
)
def test_a_gathered_output_gives_the_crossentropy_of_its_logits(activation):
    """Through a transformation (here a row mask), the loss still comes from
    the logits: saturated probabilities would be clipped (another value)."""
    keep = tf.constant([True, True])

    @tf.function
    def losses(logits):
        output = activation(logits)
        found = _internals.output_logits(output)
        assert found is not None
        masked = _internals.map_keeping_logits(lambda part: tf.boolean_mask(part, keep), output)
        plain = tf.boolean_mask(output, keep)
        halves = [
            _internals.map_keeping_logits(lambda part: part[:1], output),
            _internals.map_keeping_logits(lambda part: part[1:], output),
        ]
        joined = _internals.concat_keeping_logits(halves)
        crossentropy = (
            keras.ops.binary_crossentropy
            if activation is not keras.activations.softmax
            else keras.ops.categorical_crossentropy
        )
        return (
            crossentropy(TARGETS, output),
            crossentropy(TARGETS, masked),
            crossentropy(TARGETS, plain),
            crossentropy(TARGETS, joined),
        )

    direct, carried, clipped, joined = (np.asarray(value) for value in losses(tf.constant(LOGITS)))
    np.testing.assert_allclose(carried, direct, rtol=1e-6)
    np.testing.assert_allclose(joined, direct, rtol=1e-6)
    # Without the logits Keras clips: the values differ (what this guards).
    assert np.abs(clipped - direct).max() > 1.0
