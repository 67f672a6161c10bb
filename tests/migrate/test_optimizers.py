# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/optimizers.py: arguments whose meaning changed in Keras 3."""

from __future__ import annotations

import pytest

from tests.migrate.helpers import check_rewrite

REWRITES = {
    "epsilon_none": (
        "import keras\nopt = keras.optimizers.Adam(lr=0.1, epsilon=None)\n",
        "import keras\nopt = keras.optimizers.Adam(learning_rate=0.1, epsilon=keras.backend.epsilon())\n",
    ),
    "clipnorm_zero": (
        "import keras\nopt = keras.optimizers.SGD(0.1, clipnorm=0)\n",
        "import keras\nopt = keras.optimizers.SGD(0.1)\n",
    ),
    "clipvalue_zero_with_clipnorm": (
        "import keras\nopt = keras.optimizers.SGD(0.1, clipnorm=1.0, clipvalue=0.0)\n",
        "import keras\nopt = keras.optimizers.SGD(0.1, clipnorm=1.0)\n",
    ),
    "clipnorm_nonzero_kept": (
        "import keras\nopt = keras.optimizers.SGD(0.1, clipnorm=1.0)\n",
        "import keras\nopt = keras.optimizers.SGD(0.1, clipnorm=1.0)\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_rewritten_optimizers_build_in_keras3():
    import keras

    keras.optimizers.Adam(learning_rate=0.1, epsilon=keras.backend.epsilon())
    keras.optimizers.SGD(0.1, clipnorm=1.0)
    with pytest.raises(ValueError):  # What the removed clipvalue=0 would have caused.
        keras.optimizers.SGD(0.1, clipnorm=1.0, clipvalue=0.0)
