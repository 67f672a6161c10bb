# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/optimizers.py: Keras 2's default learning rates and update formulas.

`keras.optimizers.Adadelta()` trained with lr=1.0 in Keras 2 and trains
with 0.001 in Keras 3 (Adagrad 0.01, Adamax and Nadam 0.002 -> 0.001); Keras
3's RMSprop, Adagrad and Nadam compute another update. Migrated scripts must
train with Keras 2.2.4's numbers (tests/compat/keras2_reference.py).
"""

from __future__ import annotations

import inspect

import keras
import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import optimizers as rule
from tests.compat import keras2_reference as reference
from tests.migrate.helpers import check_rewrite

_COMPAT = "parallel_keras.compat.keras2_optimizer"

REWRITES = {
    "adadelta_without_arguments": (
        "import keras\nopt = keras.optimizers.Adadelta()\n",
        "import keras\nopt = keras.optimizers.Adadelta(learning_rate=1.0)\n",
    ),
    "adadelta_other_arguments": (
        "import keras\nopt = keras.optimizers.Adadelta(rho=0.9)\n",
        "import keras\nopt = keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9)\n",
    ),
    "adamax_imported_class_epsilon_none": (
        "from keras.optimizers import Adamax\nopt = Adamax(epsilon=None)\n",
        "from keras.optimizers import Adamax\nimport keras\n\n"
        "opt = Adamax(learning_rate=0.002, epsilon=keras.backend.epsilon())\n",
    ),
    "compile_string_keyword": (
        "import keras\nmodel.compile(optimizer='adadelta', loss='mse')\n",
        "import keras\nmodel.compile(\n"
        "    optimizer=keras.optimizers.Adadelta(learning_rate=1.0), loss='mse'\n)\n",
    ),
    "compile_string_positional_capitalised": (
        "from keras.models import Sequential\nmodel.compile('Adamax', 'mse')\n",
        "from keras.models import Sequential\nimport keras\n\n"
        "model.compile(keras.optimizers.Adamax(learning_rate=0.002), 'mse')\n",
    ),
    "compile_module_constant": (
        "import keras\nOPTIMIZER = 'adadelta'\nmodel.compile(optimizer=OPTIMIZER, loss='mse')\n",
        "import keras\nOPTIMIZER = 'adadelta'\nmodel.compile(\n"
        "    optimizer=keras.optimizers.Adadelta(learning_rate=1.0), loss='mse'\n)\n",
    ),
    "optimizers_get_string": (
        "import keras\nopt = keras.optimizers.get('adadelta')\n",
        "import keras\nopt = keras.optimizers.Adadelta(learning_rate=1.0)\n",
    ),
    "rmsprop_through_compat": (
        "from keras.optimizers import RMSprop\nopt = RMSprop(lr=0.01, rho=0.8)\n",
        "from keras.optimizers import RMSprop\nimport parallel_keras\n\n"
        f"opt = {_COMPAT}(RMSprop)(\n    learning_rate=0.01, rho=0.8\n)\n",
    ),
    "nadam_schedule_decay_through_compat": (
        "import keras\nopt = keras.optimizers.Nadam(schedule_decay=0.01)\n",
        "import keras\nimport parallel_keras\n\n"
        f"opt = {_COMPAT}(keras.optimizers.Nadam)(\n"
        "    learning_rate=0.002, schedule_decay=0.01\n)\n",
    ),
    "compile_string_adagrad_through_compat": (
        "import keras\nmodel.compile(optimizer='adagrad', loss='mse')\n",
        "import keras\nimport parallel_keras\n\nmodel.compile(\n"
        f"    optimizer={_COMPAT}(keras.optimizers.Adagrad)(\n"
        "        learning_rate=0.01\n    ),\n    loss='mse'\n)\n",
    ),
}
UNCHANGED = {
    "tf_keras_class": "import tensorflow as tf\nopt = tf.keras.optimizers.Adadelta()\n",
    "tf_keras_string": "import tensorflow as tf\nmodel.compile(optimizer='adadelta')\n",
    "legacy_module": "import keras\nopt = keras.optimizers.legacy.Adadelta(rho=0.9)\n",
    "same_default": "import keras\nopt = keras.optimizers.Adam()\nmodel.compile('sgd', 'mse')\n",
    "learning_rate_given": "import keras\nopt = keras.optimizers.Adadelta(0.5)\n",
    "function_parameter_named_like_a_constant": (
        "import keras\noptimizer = 'adadelta'\n\n\n"
        "def build(model, optimizer):\n    model.compile(optimizer=optimizer, loss='mse')\n"
    ),
    "regular_expression": "import keras\nimport re\npattern = re.compile('adadelta')\n",
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_keras2_defaults_and_formulas_rewrites(before, after):
    result = check_rewrite(before, after)
    assert not result.report.flags
    assert any("Keras 3" in change.message for change in result.report.changes)


@pytest.mark.parametrize("source", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_optimizers_keras3_reads_as_keras2_did_are_left(source):
    assert migrate.migrate_source(source).migrated == source


def test_compat_rewrites_are_reported_with_the_modern_class():
    result = migrate.migrate_source("import keras\nopt = keras.optimizers.RMSprop()\n")
    (line,) = [change for change in result.report.changes if change.modern]
    assert "sqrt(a) + epsilon" in line.message
    assert "keras.optimizers.RMSprop(" in line.modern


def test_keras3_default_learning_rates_are_the_installed_keras():
    for name, default in rule.KERAS3_DEFAULT_LR.items():
        signature = inspect.signature(getattr(keras.optimizers, name))
        assert signature.parameters["learning_rate"].default == float(default), name
    for name, defaults in reference.KERAS2_DEFAULTS.items():
        assert float(rule.LEGACY_DEFAULT_LR[name]) == defaults["lr"], name


def _optimizer_of(source: str):
    namespace: dict = {}
    exec(compile(source, "train.py", "exec"), namespace)  # noqa: S102
    return namespace["optimizer"]


NAMES = list(reference.KERAS2_DEFAULTS)
SPELLINGS = {
    "class": "import keras\noptimizer = keras.optimizers.{name}()\n",
    "string": "import keras\noptimizer = keras.optimizers.get('{lower}')\n",
}


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("name", NAMES)
def test_migrated_keras2_optimizer_trains_with_keras2_numbers(name, spelling):
    source = SPELLINGS[spelling].format(name=name, lower=name.lower())
    migrated = migrate.migrate_source(source).migrated
    weights = reference.train(reference.linear_model(), _optimizer_of(migrated), 5)
    expected = reference.keras2_weights(name, 5)
    moved = np.abs(expected[0] - reference.KERNEL).max()
    for got, want in zip(weights, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=moved * 1e-3)
    if name not in ("SGD", "Adam"):
        # Unmigrated, Keras 3 reads the same line with another learning rate
        # or formula, and moves the weights elsewhere.
        unmigrated = reference.train(reference.linear_model(), _optimizer_of(source), 5)
        assert not np.allclose(unmigrated[0], expected[0], rtol=1e-4, atol=moved * 1e-3)
