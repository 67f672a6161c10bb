# SPDX-License-Identifier: Apache-2.0
"""Touches TensorFlow before `simulate_devices`: under the launcher, an error."""

import tensorflow as tf

tf.constant(1.0)  # TensorFlow starts here, with the default devices.

import parallel_keras  # noqa: E402

parallel_keras.simulate_devices(2)
