# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/keras1_merge.py: Keras 1's merge(inputs, mode=...) function."""

from __future__ import annotations

import numpy as np
import pytest

from tests.migrate.helpers import check_flag, check_rewrite

_HEAD = "from keras.layers import Input, Dense, merge\n"
_HEAD_AFTER = "from keras.layers import Input, Dense\nimport keras\n\n"
REWRITES = {
    "concat_axis": (
        "x = merge([a, b], mode='concat', concat_axis=-1)\n",
        "x = keras.layers.concatenate([a, b], axis=-1)\n",
    ),
    "default_sum_with_name": (
        "x = merge([a, b], name='s')\n",
        "x = keras.layers.add([a, b], name='s')\n",
    ),
    "mul": ("x = merge([a, b], mode='mul')\n", "x = keras.layers.multiply([a, b])\n"),
    "ave": ("x = merge([a, b], mode='ave')\n", "x = keras.layers.average([a, b])\n"),
    "max": ("x = merge([a, b], mode='max')\n", "x = keras.layers.maximum([a, b])\n"),
    "dot": (
        "x = merge([a, b], mode='dot', dot_axes=1)\n",
        "x = keras.layers.dot([a, b], axes=1)\n",
    ),
    "cos": (
        "x = merge([a, b], mode='cos', dot_axes=1)\n",
        "x = keras.layers.dot([a, b], axes=1, normalize=True)\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(_HEAD + before, _HEAD_AFTER + after)


@pytest.mark.parametrize(
    "key, expected",
    [
        ("concat_axis", lambda a, b: np.concatenate([a, b], -1)),
        ("default_sum_with_name", lambda a, b: a + b),
        ("mul", lambda a, b: a * b),
        ("ave", lambda a, b: (a + b) / 2),
        ("max", np.maximum),
        ("dot", lambda a, b: (a * b).sum(-1, keepdims=True)),
    ],
)
def test_rewritten_merge_computes_the_keras1_mode(key, expected):
    import keras

    code = _HEAD_AFTER + "a = Input((3,))\nb = Input((3,))\n" + REWRITES[key][1]
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102
    model = keras.Model([namespace["a"], namespace["b"]], namespace["x"])
    left, right = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)
    np.testing.assert_allclose(
        model.predict([left, right], verbose=0), expected(left, right), rtol=1e-6
    )


def test_the_module_form_of_merge_still_moves():
    check_rewrite(
        "from keras.layers import merge\nx = merge.concatenate([a, b])\n",
        "from keras import layers as merge\nx = merge.concatenate([a, b])\n",
    )


def test_callable_mode_is_flagged_and_its_import_kept():
    result = check_flag(
        _HEAD + "x = merge([a, b], mode=lambda t: t[0] - t[1], "
        "output_shape=(3,))\ny = merge([a, b], mode='sum')\n",
        "Lambda",
    )
    assert "x = merge([a, b], mode=lambda" in result.migrated
    assert "y = keras.layers.add([a, b])\n" in result.migrated
    # The name stays bound (the flagged line fails loudly, not with a NameError).
    assert "from keras import layers as merge\n" in result.migrated
