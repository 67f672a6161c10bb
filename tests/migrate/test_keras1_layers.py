# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/keras1_layers.py: Keras 1 layer arguments, as Keras 2 read them."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras.migrate.rules import keras1_layers
from tests.migrate.helpers import check_rules, run_rules

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


_WEIGHTS_RULE = keras1_layers.InitialWeightsRule


def test_layer_weights_argument_goes_through_initial_weights():
    # The file's long first line leaves the rewritten line unwrapped.
    long = "# " + "-" * 98 + "\n"
    check_rules(
        long + "import keras\nd = keras.layers.Dense(6, weights=[w, b], name='loc')(x)\n",
        long + "import keras\nimport parallel_keras\n\n"
        "d = parallel_keras.compat.initial_weights(keras.layers.Dense(6, name='loc'), [w, b])(x)\n",
        _WEIGHTS_RULE,
    )


@pytest.mark.slow
def test_migrated_layer_weights_start_from_the_given_values_on_4_devices():
    # crnn_ocr's localisation net (a spatial transformer starting at the
    # identity) and the pretrained-embedding idiom: Keras 2 set `weights=`
    # once the layer was built; Keras 3 rejects the argument.
    before = (
        "import numpy as np\n"
        "from keras.layers import Dense, Embedding, Flatten, Input, concatenate\n"
        "from keras.models import Model\n"
        "W = np.arange(8, dtype='float32').reshape(4, 2) / 10\n"
        "b = np.array([1.0, -1.0], dtype='float32')\n"
        "vectors = np.linspace(0, 1, 15, dtype='float32').reshape(5, 3)\n"
        "x = Input((4,))\n"
        "ids = Input((2,), dtype='int32')\n"
        "words = Flatten()(Embedding(5, 3, weights=[vectors], trainable=False)(ids))\n"
        "model = Model([x, ids], concatenate([Dense(2, weights=[W, b])(x), words]))\n"
    )
    namespace: dict = {}
    with pytest.raises((TypeError, ValueError), match="weights"):
        exec(before, {})  # Keras 3's Dense rejects `weights=`.
    result = run_rules(before, _WEIGHTS_RULE)
    assert "weights=" not in result.migrated
    exec(result.migrated, namespace)
    model = namespace["model"]
    x = np.ones((8, 4), dtype="float32")
    ids = np.tile(np.array([[0, 4]], dtype="int32"), (8, 1))
    rows = np.concatenate([namespace["vectors"][0], namespace["vectors"][4]])
    want = np.concatenate([x @ namespace["W"] + namespace["b"], np.tile(rows, (8, 1))], axis=1)
    np.testing.assert_allclose(model.predict([x, ids], verbose=0), want, rtol=1e-6)
    parallel = parallel_keras.multi_gpu_model(model, gpus=4)
    np.testing.assert_allclose(parallel.predict([x, ids], verbose=0), want, rtol=1e-6)
