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


# What each callback leaves in Keras 2's `optimizer.lr` (the base rate) at
# each of the 5 full-batch epochs, from lr=0.1: LearningRateScheduler sets it
# at each epoch's start; ReduceLROnPlateau (min_delta so large that no epoch
# after the first improves, patience=0) halves it at the end of epochs 1-3.
CALLBACKS = {
    "LearningRateScheduler": (
        lambda: keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 * 0.5**epoch),
        [0.1, 0.05, 0.025, 0.0125, 0.00625],
    ),
    "ReduceLROnPlateau": (
        lambda: keras.callbacks.ReduceLROnPlateau(
            monitor="loss", factor=0.5, patience=0, min_delta=1e9
        ),
        [0.1, 0.1, 0.05, 0.025, 0.0125],
    ),
}


@pytest.mark.parametrize("gpus", [1, 4])
@pytest.mark.parametrize("callback", CALLBACKS.keys())
def test_a_callback_sets_keras2s_base_rate_and_the_time_decay_goes_on(callback, gpus):
    # Keras 2: `lr` was a variable the callback set, and `decay` divided it
    # by (1 + decay * iterations) inside each update. A Keras 3
    # InverseTimeDecay schedule computes the decay but raises when set.
    make_callback, base_rates = CALLBACKS[callback]
    kwargs = {"lr": 0.1, "momentum": 0.9, "decay": 0.1}
    optimizer = compat.keras2_optimizer(keras.optimizers.SGD)(**kwargs)
    model = reference.linear_model()
    if gpus > 1:
        model = parallel_keras.multi_gpu_model(model, gpus=gpus)
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(
        reference.X.astype("float32"),
        reference.Y.astype("float32"),
        batch_size=len(reference.X),
        epochs=STEPS,
        shuffle=False,
        verbose=0,
        callbacks=[make_callback()],
    )
    expected = reference.keras2_weights(
        "SGD", STEPS, decay=0.1, base_rates=base_rates, momentum=0.9, nesterov=False
    )
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-9)
    # The rate the callbacks read and set is the base rate, as Keras 2's `lr`.
    assert float(optimizer.learning_rate) == pytest.approx(
        base_rates[-1] * (0.5 if callback == "ReduceLROnPlateau" else 1.0)
    )
    assert len(history.history["loss"]) == STEPS


def test_keras2_time_decay_is_in_the_config_and_comes_back():
    sgd_class = compat.keras2_optimizer(keras.optimizers.SGD)
    config = sgd_class(lr=0.1, decay=0.01).get_config()
    assert config["decay"] == 0.01
    rebuilt = sgd_class.from_config(config)
    assert rebuilt.decay == 0.01 and float(rebuilt.learning_rate) == pytest.approx(0.1)
    assert "decay" not in sgd_class(lr=0.1).get_config()


def test_a_base_with_its_own_update_step_keeps_it():
    class Halved(keras.optimizers.RMSprop):
        def update_step(self, gradient, variable, learning_rate):
            super().update_step(gradient * 0.5, variable, learning_rate)

    assert compat.keras2_optimizer(Halved).update_step is Halved.update_step
    assert (
        compat.keras2_optimizer(keras.optimizers.RMSprop).update_step
        is not keras.optimizers.RMSprop.update_step
    )
