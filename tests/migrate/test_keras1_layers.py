# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/keras1_layers.py: Keras 1 layer arguments, as Keras 2 read them."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from parallel_keras.migrate.rules import keras1_layers
from tests.migrate.helpers import check_rules

_RULE = keras1_layers.Keras1LayerArgsRule


@pytest.mark.parametrize(
    "before, after",
    [
        (
            "from keras.layers import Convolution2D\n"
            "c = Convolution2D(8, 3, 3, border_mode='valid', subsample=(2, 2))\n",
            "from keras.layers import Convolution2D\n"
            "c = Convolution2D(8, (3, 3), padding='valid', strides=(2, 2))\n",
        ),
        (
            "from keras.layers import Conv2D\nc = Conv2D(8, k[0], k[1])\n",
            "from keras.layers import Conv2D\nc = Conv2D(8, k[0], k[1])\n",
        ),
        (
            "import keras\nd = keras.layers.Dense(output_dim=4, init='zeros', bias=False)\n",
            "import keras\nd = keras.layers.Dense(units=4, kernel_initializer='zeros', "
            "use_bias=False)\n",
        ),
        (
            "from keras.layers import MaxPooling2D\n"
            "p = MaxPooling2D(pool_size=(2, 2), dim_ordering='th', border_mode='same')\n",
            "from keras.layers import MaxPooling2D\n"
            # Longer than 79 characters (the file's lines were shorter): split.
            "p = MaxPooling2D(\n"
            "    pool_size=(2, 2), data_format='channels_first', padding='same'\n"
            ")\n",
        ),
    ],
)
def test_keras1_arguments_are_written_as_keras2_read_them(before, after):
    check_rules(before, after, _RULE)


def test_migrated_keras1_model_builds_and_runs():
    before = (
        "from keras.models import Sequential\n"
        "from keras.layers import Convolution2D, Dense, Dropout, Flatten, Input\n"
        "model = Sequential([Input((6, 6, 1)),\n"
        "    Convolution2D(4, 3, 3, border_mode='same', init='ones'),\n"
        "    Dropout(p=0.5), Flatten(), Dense(output_dim=2, bias=False)])\n"
    )
    namespace: dict = {}
    with pytest.raises((TypeError, ValueError)):
        exec(before, namespace)  # Keras 3 rejects the Keras 1 arguments.
    result = check_rules(
        before,
        before.replace("3, 3, border_mode", "(3, 3), padding")
        .replace("init=", "kernel_initializer=")
        .replace("p=0.5", "rate=0.5")
        .replace("output_dim=2, bias", "units=2, use_bias"),
        _RULE,
    )
    exec(result.migrated, namespace)
    model = namespace["model"]
    conv = model.layers[0]
    assert conv.kernel_size == (3, 3) and conv.padding == "same"
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(conv.kernel), np.ones((3, 3, 1, 4)))
    assert model.layers[1].rate == 0.5 and not model.layers[-1].use_bias
    assert model.predict(np.ones((1, 6, 6, 1)), verbose=0).shape == (1, 2)
