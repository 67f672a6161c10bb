# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `trainable` rule on the parallel model: the legacy GAN loop.

Keras 2 fixed the weights a model trains when it was compiled; the legacy
GAN loop (D compiled, D frozen, the combined G -> D model compiled, then
alternating `train_on_batch`) trains D in its own steps and only G in the
combined ones. Checked against a hand-written one-device loop that updates
exactly the variables trainable at each model's compile.
"""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras

ATOL = 1e-5
ROWS = 8
STEPS = 3


def gan_models(seed=0):
    keras.utils.set_random_seed(seed)
    discriminator = keras.Sequential(
        # No bias before BatchNormalization: its gradient is 0 up to rounding,
        # which Adam would scale up to full steps.
        [
            keras.Input((3,)),
            keras.layers.Dense(4, use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Activation("tanh"),
            keras.layers.Dense(1, activation="sigmoid"),
        ],
        name="discriminator",
    )
    generator = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(3, activation="tanh")], name="generator"
    )
    return discriminator, generator


def batches(step):
    rng = np.random.default_rng(step)
    real = rng.normal(size=(ROWS, 3)).astype("float32")
    noise = rng.normal(size=(ROWS, 2)).astype("float32")
    labels = (rng.random((ROWS, 1)) > 0.5).astype("float32")
    return real, noise, labels


def one_device_keras2_reference(d_step_updates_moving_statistics):
    """The loop on one device, updating only the weights trainable at compile.

    Keras 2's BatchNormalization normalized with the batch's statistics in
    every training step, and updated its moving statistics only where D was
    trainable when the model's train function was built (its first train
    call): never in the combined steps, and in D's own steps only if D was
    unfrozen then (the Keras 3 idiom), not in the freeze-once loop.
    """
    discriminator, generator = gan_models()
    batchnorm = discriminator.layers[1]
    d_trained = list(discriminator.trainable_weights)  # D compiled trainable
    g_trained = list(generator.trainable_weights)  # combined compiled, D frozen
    d_optimizer = keras.optimizers.Adam(0.01)
    c_optimizer = keras.optimizers.Adam(0.01)
    loss = keras.losses.BinaryCrossentropy()
    for step in range(STEPS):
        real, noise, labels = batches(step)
        batchnorm.momentum = 0.99 if d_step_updates_moving_statistics else 1.0
        with tf.GradientTape() as tape:
            value = loss(labels, discriminator(real, training=True))
        batchnorm.momentum = 1.0
        d_optimizer.apply_gradients(zip(tape.gradient(value, d_trained), d_trained))
        with tf.GradientTape() as tape:
            value = loss(
                np.ones((ROWS, 1), "float32"),
                discriminator(generator(noise, training=True), training=True),
            )
        c_optimizer.apply_gradients(zip(tape.gradient(value, g_trained), g_trained))
    return discriminator, generator


@pytest.mark.parametrize("idiom", ["keras2_freeze_once", "keras3_toggle"])
def test_gan_loop_trains_what_was_trainable_at_compile(idiom):
    discriminator, generator = gan_models()
    # Synchronized statistics, so that 2 replicas normalize as one device.
    parallel_d = parallel_keras.multi_gpu_model(discriminator, gpus=2, sync_batchnorm=True)
    parallel_d.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy")
    discriminator.trainable = False
    noise_input = keras.Input((2,))
    combined = keras.Model(noise_input, discriminator(generator(noise_input)))
    parallel_combined = parallel_keras.multi_gpu_model(combined, gpus=2, sync_batchnorm=True)
    parallel_combined.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(STEPS):
            real, noise, labels = batches(step)
            if idiom == "keras3_toggle":
                discriminator.trainable = True
            parallel_d.train_on_batch(real, labels)
            if idiom == "keras3_toggle":
                discriminator.trainable = False
            parallel_combined.train_on_batch(noise, np.ones((ROWS, 1), "float32"))
    discrepancies = [w for w in caught if "Discrepancy between trainable" in str(w.message)]
    # Keras 2 warned when D's model trained with D frozen since its compile.
    assert len(discrepancies) == (1 if idiom == "keras2_freeze_once" else 0)

    reference_d, reference_g = one_device_keras2_reference(
        d_step_updates_moving_statistics=idiom == "keras3_toggle"
    )
    for trained, reference in ((discriminator, reference_d), (generator, reference_g)):
        for got, want in zip(trained.get_weights(), reference.get_weights()):
            np.testing.assert_allclose(got, want, atol=ATOL)
    initial_d, _ = gan_models()
    moved = max(
        float(np.abs(a - b).max())
        for a, b in zip(discriminator.get_weights(), initial_d.get_weights())
    )
    assert moved > 1e-3  # D trained in its own steps
    moving_mean = discriminator.layers[1].moving_mean.numpy()
    assert np.any(moving_mean != 0) == (idiom == "keras3_toggle")


def test_recompiling_takes_the_trainable_set_now():
    discriminator, _ = gan_models()
    parallel_d = parallel_keras.multi_gpu_model(discriminator, gpus=2)
    discriminator.trainable = False
    parallel_d.compile(optimizer="sgd", loss="binary_crossentropy")
    real, _, labels = batches(0)
    before = discriminator.get_weights()
    with pytest.warns(UserWarning, match="no trainable weights|any trainable"):
        parallel_d.train_on_batch(real, labels)
    for got, want in zip(discriminator.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    discriminator.trainable = True
    parallel_d.compile(optimizer="sgd", loss="binary_crossentropy")
    parallel_d.train_on_batch(real, labels)
    assert any(not np.array_equal(a, b) for a, b in zip(discriminator.get_weights(), before))
