# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/keyword_only.py: Keras 2 positional arguments, by keyword.

Each rewrite is checked on text and by running the migrated code with Keras 3.
"""

from __future__ import annotations

import keras
import pytest

from parallel_keras.migrate.rules import keyword_only
from tests.migrate.helpers import check_rules

_RULE = keyword_only.KeywordOnlyRule


@pytest.mark.parametrize(
    "before, after",
    [
        (
            "from keras.models import Model\nm = Model(inp, out, 'net')\n",
            "from keras.models import Model\nm = Model(inp, out, name='net')\n",
        ),
        (
            "import keras\nm = keras.models.Model([a, b], out, name)\n",
            "import keras\nm = keras.models.Model([a, b], out, name=name)\n",
        ),
        (
            "from tensorflow import keras\ns = keras.Sequential([layer], 'seq')\n",
            "from tensorflow import keras\ns = keras.Sequential([layer], name='seq')\n",
        ),
        (
            "model.compile('sgd', 'mse', ['acc'], [1.0])\n",
            "model.compile('sgd', 'mse', metrics=['acc'], loss_weights=[1.0])\n",
        ),
    ],
)
def test_positional_arguments_go_by_their_keras2_keyword(before, after):
    check_rules(before, after, _RULE)


@pytest.mark.parametrize(
    "source",
    [
        "from keras.models import Model\nm = Model(inp, out)\n",
        "from keras.models import Model\nm = Model(inputs=inp, outputs=out, name='n')\n",
        "import re\npattern = re.compile('a+', re.I, extra)\n",
        "model.compile('sgd', 'mse', metrics=['acc'])\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, _RULE)
    assert not result.report.changes


def _run(source: str) -> dict:
    namespace: dict = {"keras": keras}
    exec(source, namespace)  # The migrated snippet, as a script runs it.
    return namespace


def test_migrated_model_and_compile_run_with_keras2_meaning():
    before = (
        "import keras\n"
        "from keras.models import Model, Sequential\n"
        "inp = keras.Input((3,))\n"
        "out = keras.layers.Dense(2)(inp)\n"
        "net = Model(inp, out, 'net')\n"
        "seq = Sequential([keras.Input((3,)), keras.layers.Dense(2)], 'seq')\n"
        "net.compile('sgd', 'mse', ['mae'])\n"
        "history = net.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)\n"
    )
    with pytest.raises(TypeError):
        _run("import numpy as np\n" + before)
    after = (
        before.replace("'net')", "name='net')")
        .replace("'seq')", "name='seq')")
        .replace("['mae'])", "metrics=['mae'])")
    )
    result = check_rules(before, after, _RULE)
    namespace = _run("import numpy as np\n" + result.migrated)
    assert namespace["net"].name == "net"
    assert namespace["seq"].name == "seq" and namespace["seq"].trainable
    # Keras 2 read ['mae'] as metrics: it is logged.
    assert "mae" in namespace["history"].history
