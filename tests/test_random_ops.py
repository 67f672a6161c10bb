# SPDX-License-Identifier: Apache-2.0
"""Random ops inside the model run on the replicas, each drawing its own noise.

Keras 2's parallel model had one random op per tower, so every replica drew
its own noise; so does the parallel model (a seedless `keras.random.normal`
as in a VAE's sampling layer, Dropout, GaussianNoise). Training is random on
either side, so the tests check that it runs, that the noise has the right
statistics and differs across replicas, and that the deterministic parts
(inference) still match one device.
"""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras
from parallel_keras._internals import seed_generators


class Sampling(keras.layers.Layer):
    """A VAE's reparameterization: mean + exp(log_var / 2) * noise, no seed
    (the mean at inference)."""

    def call(self, inputs, training=None):
        mean, log_var = inputs
        if not training:
            return mean
        return mean + keras.ops.exp(0.5 * log_var) * keras.random.normal(keras.ops.shape(mean))


class NoiseOnly(keras.layers.Layer):
    """Replaces its input by standard normal noise while training."""

    def call(self, inputs, training=None):
        if training:
            return inputs * 0.0 + keras.random.normal(keras.ops.shape(inputs))
        return inputs


def vae(seed=0, dropout=True):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    mean, log_var = keras.layers.Dense(2)(hidden), keras.layers.Dense(2)(hidden)
    code = Sampling()([mean, log_var])
    hidden = keras.layers.Dense(8, activation="relu")(code)
    if dropout:
        hidden = keras.layers.GaussianNoise(0.1)(keras.layers.Dropout(0.2)(hidden))
    return keras.Model(inputs, keras.layers.Dense(6)(hidden))


@pytest.mark.parametrize("cpu_relocation", [False, True])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_a_vae_with_seedless_sampling_trains_and_predicts_like_one_device(cpu_relocation):
    x = np.random.RandomState(0).rand(32, 6).astype("float32")
    template = vae()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, cpu_relocation=cpu_relocation)
    parallel.compile(keras.optimizers.Adam(0.01), "mse")
    history = parallel.fit(x, x, batch_size=8, epochs=3, verbose=0).history
    assert np.all(np.isfinite(history["loss"]))
    # Inference is deterministic: the same weights give one device's outputs.
    reference = vae()
    reference.set_weights(template.get_weights())
    np.testing.assert_allclose(
        parallel.predict(x, batch_size=8, verbose=0), reference.predict(x, verbose=0), atol=1e-5
    )


def test_each_replica_draws_its_own_noise():
    """Noise per row: mean 0, variance 1, and not the same draw on every replica."""
    inputs = keras.Input((64,))
    template = keras.Model(inputs, NoiseOnly()(keras.layers.Dense(64)(inputs)))
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    # With loss mse against 0 and SGD(0), the train logs are the noise's mean square.
    parallel.compile(keras.optimizers.SGD(0.0), "mse")
    rows = np.zeros((16, 64), "float32")
    noise = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            noise.append(logs["loss"])

    parallel.fit(rows, rows, batch_size=16, epochs=4, verbose=0, callbacks=[Record()])
    np.testing.assert_allclose(np.mean(noise), 1.0, atol=0.1)
    # The replicas' draws, as the steps make them: all different.
    strategy = parallel.strategy

    def replica_draw():
        seed_generators.use_replica_seed_generator()
        return keras.random.normal((4,))

    draws = strategy.experimental_local_results(
        tf.function(lambda: strategy.run(replica_draw), autograph=False)()
    )
    assert len({tuple(np.round(np.asarray(draw), 6)) for draw in draws}) == 4


@pytest.mark.parametrize("cpu_relocation", [False, True])
def test_dropout_draws_its_own_mask_on_each_replica(cpu_relocation):
    inputs = keras.Input((64,))
    template = keras.Model(inputs, keras.layers.Dropout(0.5)(keras.layers.Dense(64)(inputs)))
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, cpu_relocation=cpu_relocation)
    parallel.compile(keras.optimizers.SGD(0.0), "mse")
    rows = np.ones((8, 64), "float32")
    parallel.fit(rows, rows, batch_size=8, verbose=0)  # runs, and prepares the layers
    strategy = parallel.strategy
    batch = next(iter(strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors(rows))))
    masks = strategy.experimental_local_results(
        tf.function(
            lambda batch: strategy.run(
                lambda rows: template(rows, training=True) != 0, args=(batch,)
            )
        )(batch)
    )
    masks = [np.asarray(mask)[0] for mask in masks]
    assert len({mask.tobytes() for mask in masks}) == 4
    assert all(0.3 < mask.mean() < 0.7 for mask in masks)


def test_an_lstm_with_dropout_and_recurrent_dropout_trains_on_replicas():
    # The cell draws its masks inside the RNN's while loop: the replicas must
    # trace the same merge calls there (a per-replica generator update did not).
    keras.utils.set_random_seed(3)
    template = keras.Sequential(
        [
            keras.Input((5, 3)),
            keras.layers.LSTM(4, dropout=0.2, recurrent_dropout=0.2),
            keras.layers.Dense(1),
        ]
    )
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile("adam", "mse")
    history = parallel.fit(
        np.ones((8, 5, 3), "float32"), np.ones((8, 1), "float32"), batch_size=4, epochs=2, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()
    assert parallel.predict(np.ones((4, 5, 3), "float32"), verbose=0).shape == (4, 1)


class ReadLog(keras.utils.PyDataset):
    """Six batches of four rows, logging the order they are read in."""

    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(3)
        self.x, self.y = rng.rand(24, 3).astype("float32"), rng.rand(24, 1).astype("float32")
        self.read = []

    def __len__(self):
        return 6

    def __getitem__(self, index):
        self.read.append(index)
        rows = slice(4 * index, 4 * (index + 1))
        return self.x[rows], self.y[rows]


def small_dense(seed=4):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
    )


@pytest.mark.slow  # 3 epochs twice with a PyDataset: ~6 s on 2 cores
@pytest.mark.parametrize("gpus", [2, 4])
def test_a_shuffled_pydataset_trains_in_one_device_batch_order(gpus):
    # fit(shuffle=True) orders a PyDataset's batches with Python's
    # `random.shuffle` each epoch. The parallel model drew a seed from
    # Python's random when its step was first traced (for seedless random
    # ops the model does not even have), so from the second epoch on it
    # trained on other batch orders than one device.
    def run(model, data):
        model.compile(keras.optimizers.SGD(0.1), "mse")
        random.seed(11)
        model.fit(data, epochs=3, shuffle=True, verbose=0)
        return random.random()  # the next number of Python's random stream

    reference = small_dense()
    reference_data = ReadLog()
    expected_next = run(reference, reference_data)
    template = small_dense()
    data = ReadLog()
    next_number = run(parallel_keras.multi_gpu_model(template, gpus=gpus), data)

    assert sorted(data.read[2:8]) == list(range(6))  # after Keras's 2-batch peek
    assert next_number == expected_next  # Python's random stream left as one device leaves it
    for got, expected in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, expected, atol=1e-5)
