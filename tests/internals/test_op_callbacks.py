# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.op_callbacks` (TF 2.21).

Fails loudly when an upgrade changes what TensorFlow's op callbacks see.
"""

import tensorflow as tf

from parallel_keras import _internals


def test_op_callbacks_see_eager_and_traced_ops():
    seen = []

    def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        seen.append(
            (graph is not None, outputs[0].device if graph is None else outputs[0].op.device)
        )

    _internals.add_op_callback(callback)
    try:
        with tf.device("/cpu:1"):
            tf.constant(1.0) * 2.0
        tf.function(lambda: tf.constant(2.0) * 3.0).get_concrete_function()
    finally:
        _internals.remove_op_callback(callback)
    assert any(not traced and device.endswith("CPU:1") for traced, device in seen)
    assert any(traced for traced, _ in seen)
