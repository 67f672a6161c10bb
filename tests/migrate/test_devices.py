# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/devices.py: `tf.device` around layer calls -> `parallel_keras.device`."""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import devices
from tests.migrate.helpers import changes, check_rules

_HEAD = "import tensorflow as tf\nfrom keras.layers import Dense, LSTM, concatenate\n"
_ADDED = "import parallel_keras\n\n"
_KEPT = (
    "`tf.device(...)` -> `parallel_keras.device(...)`: Keras 3 drops tf.device placement "
    "of layer calls when the model runs; parallel_keras.device keeps it"
)

REWRITES = {
    "layer_built_and_called_in_the_scope": (
        _HEAD + "with tf.device('/gpu:1'):\n    b = Dense(4)(x)\n",
        _HEAD + _ADDED + "with parallel_keras.device('/gpu:1'):\n    b = Dense(4)(x)\n",
        [(3, _KEPT)],
    ),
    "shared_layer_built_before_the_scope": (
        _HEAD + "shared = LSTM(8)\nwith tf.device('/gpu:0'):\n    a = shared(x)\n",
        _HEAD
        + _ADDED
        + "shared = LSTM(8)\nwith parallel_keras.device('/gpu:0'):\n    a = shared(x)\n",
        [(4, _KEPT)],
    ),
    "merge_function": (
        _HEAD + "with tf.device('/cpu:0'):\n    merged = concatenate([a, b])\n",
        _HEAD
        + _ADDED
        + "with parallel_keras.device('/cpu:0'):\n    merged = concatenate([a, b])\n",
        [(3, _KEPT)],
    ),
    "tf_keras_layers": (
        "import tensorflow as tf\nwith tf.device('/gpu:0'):\n    y = tf.keras.layers.Dense(4)(x)\n",
        "import tensorflow as tf\nimport parallel_keras\n\nwith parallel_keras.device('/gpu:0'):\n"
        "    y = tf.keras.layers.Dense(4)(x)\n",
        [(2, _KEPT)],
    ),
    "device_scope_never_existed": (
        "import tensorflow as tf\nwith tf.device_scope('/gpu:0'):\n    c = 1\n",
        "import tensorflow as tf\nimport parallel_keras\n\n"
        "with parallel_keras.device('/gpu:0'):\n    c = 1\n",
        [
            (
                2,
                "`tf.device_scope(...)` -> `parallel_keras.device(...)`: tf.device_scope "
                "never existed in TensorFlow",
            )
        ],
    ),
    "only_the_device_item_of_a_with": (
        _HEAD + "shared = LSTM(8)\nwith tf.device('/gpu:0'), open('f') as f:\n    a = shared(f)\n",
        _HEAD + _ADDED + "shared = LSTM(8)\nwith parallel_keras.device('/gpu:0'), open('f') as f:\n"
        "    a = shared(f)\n",
        [(4, _KEPT)],
    ),
}


@pytest.mark.parametrize("before, after, recorded", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, recorded):
    result = check_rules(before, after, devices.DeviceScopeRule)
    assert changes(result, devices.RULE) == recorded
    assert not result.report.flags


@pytest.mark.parametrize(
    "source",
    [
        # The template-on-CPU idiom: placing where a model is built still works.
        "import tensorflow as tf\nimport keras\nwith tf.device('/cpu:0'):\n"
        "    model = keras.applications.Xception(weights=None)\n",
        # TensorFlow ops, no layer.
        "import tensorflow as tf\nwith tf.device('/gpu:0'):\n    z = tf.matmul(a, b)\n",
        # A vendored Keras 2 multi_gpu_model: its towers are not placements.
        _HEAD + "def multi_gpu_model(model, gpus):\n    with tf.device('/gpu:0'):\n"
        "        out = Dense(2)(x)\n",
        # Not TensorFlow's device.
        "with device('/gpu:0'):\n    y = layer(x)\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, devices.DeviceScopeRule)
    assert not result.report.changes and not result.report.flags
