# SPDX-License-Identifier: Apache-2.0
"""Canary for `parallel_keras._internals.sessions`: TF1 sessions keep their config."""

import tensorflow as tf

from parallel_keras import _internals


def test_a_tf1_session_keeps_the_config_it_was_made_with():
    # BaseSession._config (tensorflow/python/client/session.py), read by
    # parallel_keras.compat.set_session to carry GPU options to tf.config.
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    with tf.Graph().as_default():
        session = tf.compat.v1.Session(config=config)
    assert _internals.session_config(session) is config
    assert _internals.session_config(object()) is None
