# SPDX-License-Identifier: Apache-2.0
"""Keras 2.2.4's optimizers (keras/optimizers.py) written out in NumPy, and a tiny model.

Each `step` is the `get_updates` of Keras 2.2.4's class of that name, line
for line (epsilon=None is the backend epsilon 1e-7, `decay` the time decay
`lr / (1 + decay * iterations)`), so the tests compare Keras 3 training to
the numbers Keras 2 computed, not to another Keras 3 optimizer.
"""

from __future__ import annotations

import keras
import numpy as np

EPSILON = 1e-7
KERAS2_DEFAULTS = {
    "SGD": {"lr": 0.01, "momentum": 0.0, "nesterov": False},
    "RMSprop": {"lr": 0.001, "rho": 0.9},
    "Adagrad": {"lr": 0.01},
    "Adadelta": {"lr": 1.0, "rho": 0.95},
    "Adam": {"lr": 0.001, "beta_1": 0.9, "beta_2": 0.999, "amsgrad": False},
    "Adamax": {"lr": 0.002, "beta_1": 0.9, "beta_2": 0.999},
    "Nadam": {"lr": 0.002, "beta_1": 0.9, "beta_2": 0.999, "schedule_decay": 0.004},
}


class Keras2Optimizer:
    """One Keras 2.2.4 optimizer over a list of NumPy weights."""

    def __init__(self, name: str, weights: list, decay: float = 0.0, **kwargs):
        self.name = name
        self.epsilon = kwargs.pop("epsilon", None) or EPSILON  # Keras 2's None.
        self.hp = {**KERAS2_DEFAULTS[name], **kwargs}
        self.decay = decay
        self.iterations = 0
        self.m_schedule = 1.0
        self.slots = [[np.zeros_like(w) for _ in range(3)] for w in weights]

    def step(self, weights: list, grads: list) -> list:
        hp, name = self.hp, self.name
        lr = hp["lr"] / (1.0 + self.decay * self.iterations) if self.decay else hp["lr"]
        t = self.iterations + 1
        new = []
        if name == "Nadam":
            cache_t = hp["beta_1"] * (1.0 - 0.5 * 0.96 ** (t * hp["schedule_decay"]))
            cache_t_1 = hp["beta_1"] * (1.0 - 0.5 * 0.96 ** ((t + 1) * hp["schedule_decay"]))
            schedule_new = self.m_schedule * cache_t
            schedule_next = self.m_schedule * cache_t * cache_t_1
            self.m_schedule = schedule_new
        for p, g, slots in zip(weights, grads, self.slots):
            if name == "SGD":
                v = hp["momentum"] * slots[0] - lr * g
                slots[0] = v
                p = p + hp["momentum"] * v - lr * g if hp["nesterov"] else p + v
            elif name == "RMSprop":
                a = hp["rho"] * slots[0] + (1.0 - hp["rho"]) * g**2
                slots[0] = a
                p = p - lr * g / (np.sqrt(a) + self.epsilon)
            elif name == "Adagrad":
                a = slots[0] + g**2
                slots[0] = a
                p = p - lr * g / (np.sqrt(a) + self.epsilon)
            elif name == "Adadelta":
                a = hp["rho"] * slots[0] + (1.0 - hp["rho"]) * g**2
                update = g * np.sqrt(slots[1] + self.epsilon) / np.sqrt(a + self.epsilon)
                p = p - lr * update
                slots[0] = a
                slots[1] = hp["rho"] * slots[1] + (1.0 - hp["rho"]) * update**2
            elif name == "Adam":
                lr_t = lr * np.sqrt(1.0 - hp["beta_2"] ** t) / (1.0 - hp["beta_1"] ** t)
                m = hp["beta_1"] * slots[0] + (1.0 - hp["beta_1"]) * g
                v = hp["beta_2"] * slots[1] + (1.0 - hp["beta_2"]) * g**2
                slots[0], slots[1] = m, v
                if hp["amsgrad"]:
                    slots[2] = np.maximum(slots[2], v)
                    v = slots[2]
                p = p - lr_t * m / (np.sqrt(v) + self.epsilon)
            elif name == "Adamax":
                lr_t = lr / (1.0 - hp["beta_1"] ** t)
                m = hp["beta_1"] * slots[0] + (1.0 - hp["beta_1"]) * g
                u = np.maximum(hp["beta_2"] * slots[1], np.abs(g))
                slots[0], slots[1] = m, u
                p = p - lr_t * m / (u + self.epsilon)
            elif name == "Nadam":
                g_prime = g / (1.0 - schedule_new)
                m = hp["beta_1"] * slots[0] + (1.0 - hp["beta_1"]) * g
                m_prime = m / (1.0 - schedule_next)
                v = hp["beta_2"] * slots[1] + (1.0 - hp["beta_2"]) * g**2
                v_prime = v / (1.0 - hp["beta_2"] ** t)
                m_bar = (1.0 - cache_t) * g_prime + cache_t_1 * m_prime
                slots[0], slots[1] = m, v
                p = p - hp["lr"] * m_bar / (np.sqrt(v_prime) + self.epsilon)
            new.append(p)
        self.iterations += 1
        return new


# A linear model on fixed data; small inputs give small gradients, where
# `sqrt(a) + eps` and `sqrt(a + eps)` part most.
RNG = np.random.RandomState(3)
X = (RNG.rand(8, 3) * 0.01).astype("float64")
Y = (RNG.rand(8, 2) * 0.01).astype("float64")
KERNEL = (RNG.rand(3, 2) * 0.1).astype("float64")
BIAS = np.zeros(2)


def keras2_weights(
    name: str, steps: int, decay: float = 0.0, base_rates: list | None = None, **kwargs
) -> list:
    """The linear model's weights after `steps` full-batch MSE steps of Keras 2.2.4's `name`.

    `base_rates[i]` is `optimizer.lr` at step i, as a Keras 2 callback
    (`ReduceLROnPlateau`, `LearningRateScheduler`) set it; `decay` applies on top.
    """
    weights = [KERNEL.copy(), BIAS.copy()]
    optimizer = Keras2Optimizer(name, weights, decay=decay, **kwargs)
    for step in range(steps):
        if base_rates is not None:
            optimizer.hp["lr"] = base_rates[step]
        error = X @ weights[0] + weights[1] - Y
        scale = 2.0 / error.size  # Keras' MSE: the mean over outputs, then over the batch.
        grads = [X.T @ error * scale, error.sum(axis=0) * scale]
        weights = optimizer.step(weights, grads)
    return weights


def linear_model() -> keras.Model:
    """The same linear model in Keras (float32), its weights set to the reference's."""
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.set_weights([KERNEL.astype("float32"), BIAS.astype("float32")])
    return model


def train(model: keras.Model, optimizer, steps: int) -> list:
    """`steps` full-batch steps of `model` (compiled here with `optimizer`, MSE)."""
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(
        X.astype("float32"),
        Y.astype("float32"),
        batch_size=len(X),
        epochs=steps,
        shuffle=False,
        verbose=0,
    )
    return model.get_weights()
