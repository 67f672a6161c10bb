# SPDX-License-Identifier: Apache-2.0
"""`compat.keras2_optimizer(base)` trains with Keras 2.2.4's numbers, on one device and four."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import compat
from tests.compat import keras2_reference as reference

# (Keras 2 class, Keras 2 arguments): every class, its defaults and some
# non-default arguments (Nadam's schedule_decay, Keras 2's time decay).
CASES = {
    "SGD_nesterov_decay": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "decay": 0.1}),
    "RMSprop": ("RMSprop", {}),
    "RMSprop_rho": ("RMSprop", {"lr": 0.01, "rho": 0.8}),
    "Adagrad": ("Adagrad", {}),
    "Adagrad_epsilon_decay": ("Adagrad", {"epsilon": 1e-3, "decay": 0.2}),
    "Adadelta": ("Adadelta", {}),
    "Adam_amsgrad": ("Adam", {"amsgrad": True}),
    "Adamax": ("Adamax", {}),
    "Nadam": ("Nadam", {}),
    "Nadam_schedule_decay": ("Nadam", {"schedule_decay": 0.1}),
}
STEPS = 5


def _keras2_arguments(kwargs):
    """The reference takes `lr` and the class's own arguments, `decay` apart."""
    kwargs = dict(kwargs)
    return kwargs.pop("decay", 0.0), kwargs


def _assert_keras2_numbers(weights, name, kwargs):
    decay, arguments = _keras2_arguments(kwargs)
    expected = reference.keras2_weights(name, STEPS, decay=decay, **arguments)
    moved = np.abs(expected[0] - reference.KERNEL).max()
    for got, want in zip(weights, expected):
        # Well within the step itself (the smallest case moves ~3e-6).
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=max(moved * 1e-3, 1e-9))


@pytest.mark.parametrize("name, kwargs", CASES.values(), ids=CASES.keys())
def test_keras2_optimizer_trains_with_keras2_numbers_on_one_device(name, kwargs):
    optimizer = compat.keras2_optimizer(getattr(keras.optimizers, name))(**kwargs)
    weights = reference.train(reference.linear_model(), optimizer, STEPS)
    _assert_keras2_numbers(weights, name, kwargs)


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Nadam", "Adadelta"])
def test_keras2_optimizer_trains_with_keras2_numbers_on_four_replicas(name):
    optimizer = compat.keras2_optimizer(getattr(keras.optimizers, name))()
    parallel = parallel_keras.multi_gpu_model(reference.linear_model(), gpus=4)
    weights = reference.train(parallel, optimizer, STEPS)
    _assert_keras2_numbers(weights, name, {})


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Nadam"])
def test_keras3_classes_differ_from_keras2_where_keras2_optimizer_overrides(name):
    # Why the overrides exist: Keras 3's own class, with Keras 2's learning
    # rate, moves the weights elsewhere.
    lr = reference.KERAS2_DEFAULTS[name]["lr"]
    weights = reference.train(
        reference.linear_model(), getattr(keras.optimizers, name)(learning_rate=lr), STEPS
    )
    with pytest.raises(AssertionError):
        _assert_keras2_numbers(weights, name, {})


def test_keras2_adagrad_accumulators_start_at_zero_and_nadam_keeps_schedule_decay():
    adagrad = compat.keras2_optimizer(keras.optimizers.Adagrad)()
    assert adagrad.initial_accumulator_value == 0.0
    assert compat.keras2_optimizer(keras.optimizers.Adagrad)(
        initial_accumulator_value=0.1
    ).initial_accumulator_value == pytest.approx(0.1)
    nadam_class = compat.keras2_optimizer(keras.optimizers.Nadam)
    nadam = nadam_class(lr=0.01, schedule_decay=0.1)
    config = nadam.get_config()
    assert config["schedule_decay"] == 0.1
    rebuilt = nadam_class.from_config(config)
    assert rebuilt.schedule_decay == 0.1
    assert float(rebuilt.learning_rate) == pytest.approx(0.01)


def test_a_base_with_its_own_update_step_keeps_it():
    class Halved(keras.optimizers.RMSprop):
        def update_step(self, gradient, variable, learning_rate):
            super().update_step(gradient * 0.5, variable, learning_rate)

    assert compat.keras2_optimizer(Halved).update_step is Halved.update_step
    assert (
        compat.keras2_optimizer(keras.optimizers.RMSprop).update_step
        is not keras.optimizers.RMSprop.update_step
    )


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Nadam"])
def test_keras2_formulas_take_an_embeddings_sparse_gradient(name):
    """An Embedding's gradient is an IndexedSlices; Keras 2 densified it (K.square(g))."""
    import tensorflow as tf

    optimizer = compat.keras2_optimizer(getattr(keras.optimizers, name))(lr=0.1)
    variable = keras.Variable(np.ones((4, 2), dtype="float32"))
    sparse = tf.IndexedSlices(
        tf.constant([[0.5, -0.5]]), indices=tf.constant([2]), dense_shape=tf.constant([4, 2])
    )
    dense = keras.Variable(np.ones((4, 2), dtype="float32"))
    twin = compat.keras2_optimizer(getattr(keras.optimizers, name))(lr=0.1)
    optimizer.apply_gradients([(sparse, variable)])
    twin.apply_gradients([(tf.convert_to_tensor(sparse), dense)])
    np.testing.assert_allclose(variable.numpy(), dense.numpy(), rtol=1e-6)
    assert not np.allclose(variable.numpy()[2], 1.0)
