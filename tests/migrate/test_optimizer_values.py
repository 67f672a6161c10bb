# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/optimizer_values.py: a Keras 2 optimizer class built out of sight."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from parallel_keras import migrate
from tests.migrate.helpers import changes

# neurowriter's optimizer.py: the class comes from a dict or a parameter's
# default, and is built with Keras 2's `lr=` far from where it is named.
_PICKED_AT_RUN_TIME = textwrap.dedent(
    """\
    from keras import optimizers
    from keras.optimizers import SGD, Adam, RMSprop, Nadam


    def optimizerbyname(optname):
        optimizers_by_name = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "nadam": Nadam}
        return optimizers_by_name[optname.lower()]


    def build(optimizerclass=Adam, **kwargs):
        return optimizerclass(**kwargs)


    def pick(classes, index):
        return classes[index]


    DEFAULTS = [optimizers.Adadelta, optimizers.Adagrad]
    default_class = optimizers.Adamax
    picked = pick((SGD, Nadam), 1)
    is_keras_optimizer = isinstance(build(lr=0.1), (Adam, SGD))
    """
)


def _migrated_namespace():
    result = migrate.migrate_source(_PICKED_AT_RUN_TIME, "optimizer.py")
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    return result, namespace


def _steps(optimizer, *gradients):
    """The variable `[1, -2]` after one update per gradient."""
    import keras

    variable = keras.Variable(np.array([1.0, -2.0], dtype="float32"))
    for gradient in gradients:
        optimizer.apply_gradients([(keras.ops.convert_to_tensor(gradient), variable)])
    return keras.ops.convert_to_numpy(variable)


def test_classes_picked_at_run_time_take_keras2_lr():
    with pytest.raises(ValueError, match="lr"):  # What Keras 3 does unmigrated.
        exec(_PICKED_AT_RUN_TIME, {})  # noqa: S102
    result, namespace = _migrated_namespace()
    assert not result.report.flags
    for name in ("sgd", "adam", "rmsprop", "nadam"):
        optimizer = namespace["build"](namespace["optimizerbyname"](name), lr=0.05)
        np.testing.assert_allclose(float(optimizer.learning_rate), 0.05, rtol=1e-6)
    assert namespace["is_keras_optimizer"]  # isinstance still sees the Keras classes.


def test_keras2_default_learning_rates_and_decay_hold_out_of_sight():
    _, namespace = _migrated_namespace()
    adadelta, adagrad = (cls() for cls in namespace["DEFAULTS"])
    np.testing.assert_allclose(float(adadelta.learning_rate), 1.0)  # Keras 3: 0.001
    np.testing.assert_allclose(float(adagrad.learning_rate), 0.01)
    np.testing.assert_allclose(float(namespace["default_class"]().learning_rate), 0.002)
    np.testing.assert_allclose(float(namespace["picked"]().learning_rate), 0.002)  # Nadam
    decayed = namespace["build"](namespace["optimizerbyname"]("sgd"), lr=0.1, decay=0.5)
    # Keras 2: each step takes lr / (1 + decay * iterations); `lr` itself (the
    # rate a callback reads and sets) stays 0.1.
    one = np.ones(2, "float32")
    weights = _steps(decayed, one, one, one)
    taken = 0.1 / (1 + 0.5 * 0) + 0.1 / (1 + 0.5 * 1) + 0.1 / (1 + 0.5 * 2)
    np.testing.assert_allclose(weights, np.array([1.0, -2.0]) - taken, rtol=1e-6)
    np.testing.assert_allclose(float(decayed.learning_rate), 0.1, rtol=1e-6)


def test_rmsprop_picked_at_run_time_steps_with_keras2_formula():
    _, namespace = _migrated_namespace()
    optimizer = namespace["optimizerbyname"]("rmsprop")(lr=0.01)
    gradient = np.array([1e-4, -3e-4], dtype="float32")
    # Keras 2.2.4: a = rho * 0 + (1 - rho) * g^2; p - lr * g / (sqrt(a) + epsilon).
    accumulator = 0.1 * gradient.astype("float64") ** 2
    expected = np.array([1.0, -2.0]) - 0.01 * gradient / (np.sqrt(accumulator) + 1e-7)
    np.testing.assert_allclose(_steps(optimizer, gradient), expected, rtol=1e-5)


def test_optimizer_values_report_a_compatibility_path_and_run_twice_unchanged():
    result = migrate.migrate_source(_PICKED_AT_RUN_TIME, "optimizer.py")
    lines = changes(result, "optimizer values")
    assert len(lines) == 10, lines
    assert all(
        change.modern for change in result.report.changes if change.rule == "optimizer values"
    )
    assert "isinstance(build(lr=0.1), (Adam, SGD))" in result.migrated
    again = migrate.migrate_source(result.migrated, "optimizer.py")
    assert again.migrated == result.migrated
    assert not changes(again, "optimizer values")


def test_tf_keras_optimizer_values_are_left_alone():
    source = "import tensorflow as tf\nOPTS = {'adam': tf.keras.optimizers.Adam}\n"
    result = migrate.migrate_source(source, "optimizer.py")
    assert "keras2_optimizer" not in result.migrated
