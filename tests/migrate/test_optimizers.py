# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/optimizers.py: arguments whose meaning changed in Keras 3."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import migrate
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


def test_keras2_lowercase_optimizer_aliases_become_their_classes():
    import keras

    source = (
        "import keras\n"
        "from keras.optimizers import adam, sgd\n"
        "a = keras.optimizers.rmsprop(lr=0.0001, rho=0.8)\n"
        "b = adam(lr=0.1)\n"
        "c = sgd(0.5, 0.9)\n"
    )
    namespace: dict = {}
    with pytest.raises(ImportError):
        exec(source, namespace)  # noqa: S102
    result = migrate.migrate_source(source)
    assert not result.report.flags
    exec(result.migrated, namespace)  # noqa: S102
    a, b, c = namespace["a"], namespace["b"], namespace["c"]
    assert isinstance(a, keras.optimizers.RMSprop) and a.rho == 0.8
    assert isinstance(b, keras.optimizers.Adam)
    assert isinstance(c, keras.optimizers.SGD) and c.momentum == 0.9
    for optimizer, lr in ((a, 0.0001), (b, 0.1), (c, 0.5)):
        np.testing.assert_allclose(float(optimizer.learning_rate), lr, rtol=1e-6)
