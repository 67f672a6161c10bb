# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/batch_shapes.py: Keras 2's batch_input_shape on the first layer."""

from __future__ import annotations

import pytest

from tests.migrate.helpers import check_flag, check_rewrite

REWRITES = {
    "add_first_layer": (
        "from keras.models import Sequential\nfrom keras.layers import LSTM, Dense\n"
        "model = Sequential()\nmodel.add(LSTM(4, stateful=True, batch_input_shape=(8, 5, 3)))\n"
        "model.add(Dense(2, batch_input_shape=(8, 4)))\n",
        "from keras.models import Sequential\nfrom keras.layers import LSTM, Dense\nimport keras\n\n"
        "model = Sequential()\nmodel.add(keras.Input(batch_shape=(8, 5, 3)))\n"
        "model.add(LSTM(4, stateful=True))\nmodel.add(Dense(2))\n",
    ),
    "batch_size_and_input_shape": (
        "import keras\nmodel = keras.models.Sequential()\n"
        "model.add(keras.layers.GRU(4, batch_size=8, input_shape=(5, 3), stateful=True))\n",
        "import keras\nmodel = keras.models.Sequential()\n"
        "model.add(keras.Input(batch_shape=(8, 5, 3)))\n"
        "model.add(keras.layers.GRU(4, stateful=True))\n",
    ),
    "sequential_list": (
        "import keras\nfrom keras.layers import Embedding, Dense\n"
        "model = keras.Sequential([Embedding(20, 4, batch_input_shape=(8, 6)), Dense(2)])\n",
        "import keras\nfrom keras.layers import Embedding, Dense\n"
        # Longer than 79 characters, so split (the file's lines were shorter).
        "model = keras.Sequential(\n"
        "    [keras.Input(batch_shape=(8, 6)), Embedding(20, 4), Dense(2)]\n"
        ")\n",
    ),
    "a_second_model_in_a_function": (
        "import keras\ndef build(b):\n    m = keras.Sequential()\n"
        "    m.add(keras.layers.Dense(2, batch_input_shape=(b, 3)))\n    return m\n",
        "import keras\ndef build(b):\n    m = keras.Sequential()\n"
        "    m.add(keras.Input(batch_shape=(b, 3)))\n    m.add(keras.layers.Dense(2))\n"
        "    return m\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


@pytest.mark.parametrize(
    "key", ["add_first_layer", "batch_size_and_input_shape", "sequential_list"]
)
def test_rewritten_model_has_the_keras2_batch_shape(key):
    namespace: dict = {}
    exec(REWRITES[key][1], namespace)  # noqa: S102
    model = namespace["model"]
    assert model.inputs[0].shape[0] == 8


def test_the_keyword_fails_in_keras3_without_the_rewrite():
    import keras

    with pytest.raises(ValueError, match="batch_input_shape"):
        keras.layers.Dense(2, batch_input_shape=(8, 3))


def test_a_layer_built_apart_is_flagged():
    result = check_flag(
        "import keras\nl = keras.layers.LSTM(4, batch_input_shape=(2, 5, 1))\n",
        "keras.Input(batch_shape=",
    )
    assert "batch_input_shape=(2, 5, 1)" in result.migrated
