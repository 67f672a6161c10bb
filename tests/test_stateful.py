# SPDX-License-Identifier: Apache-2.0
"""Stateful RNN templates (keras-team/keras#8397): each replica keeps its rows' state."""

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import testing

ATOL = 1e-5
PER_REPLICA, REPLICAS, STEPS, FEATURES = 2, 4, 3, 3
GLOBAL = PER_REPLICA * REPLICAS


def stateful_lstm(batch, seed=11):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input(batch_shape=(batch, STEPS, FEATURES))
    x = keras.layers.LSTM(5, stateful=True)(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(x), name="stateful")


def sequences(batches):
    rng = np.random.RandomState(3)
    x = rng.rand(batches * GLOBAL, STEPS, FEATURES).astype("float32")
    return x, rng.rand(batches * GLOBAL, 1).astype("float32")


def pair():
    """A wrapped template (batch b) and one device's model (batch N x b), same weights."""
    template = stateful_lstm(PER_REPLICA)
    reference = stateful_lstm(GLOBAL)
    reference.set_weights(template.get_weights())
    parallel = parallel_keras.multi_gpu_model(template, gpus=REPLICAS)
    return template, parallel, reference


def test_state_carries_across_batches_per_replica_like_one_device():
    template, parallel, reference = pair()
    x, y = sequences(3)
    for model in (parallel, reference):
        model.compile(keras.optimizers.SGD(0.1), "mse")
    # Three consecutive batches, no reset: each step continues each row's state.
    for step in range(3):
        rows = slice(step * GLOBAL, (step + 1) * GLOBAL)
        # Each batch's own loss, as Keras 2 and Keras 3.11+ report it (up to
        # 3.10, Keras's `train_on_batch` averages over every batch so far).
        reference.reset_metrics()
        np.testing.assert_allclose(
            parallel.train_on_batch(x[rows], y[rows]),
            reference.train_on_batch(x[rows], y[rows]),
            atol=ATOL,
        )
    for a, b in zip(reference.get_weights(), template.get_weights()):
        np.testing.assert_allclose(a, b, atol=ATOL)
    np.testing.assert_allclose(
        parallel.predict(x, batch_size=GLOBAL, verbose=0),
        reference.predict(x, batch_size=GLOBAL, verbose=0),
        atol=ATOL,
    )
    parallel.fit(x, y, batch_size=GLOBAL, shuffle=False, verbose=0)
    reference.fit(x, y, batch_size=GLOBAL, shuffle=False, verbose=0)
    for a, b in zip(reference.get_weights(), template.get_weights()):
        np.testing.assert_allclose(a, b, atol=ATOL)


@pytest.mark.parametrize("which", ["parallel", "template"])
def test_reset_states_on_either_model_resets_every_replica(which):
    template, parallel, reference = pair()
    x, _ = sequences(2)
    fresh = reference.predict(x[:GLOBAL], batch_size=GLOBAL, verbose=0)
    reference.layers[1].reset_state()
    parallel.predict(x, batch_size=GLOBAL, verbose=0)  # builds up state
    {"parallel": parallel, "template": template}[which].reset_states()
    np.testing.assert_allclose(
        parallel.predict(x[:GLOBAL], batch_size=GLOBAL, verbose=0), fresh, atol=ATOL
    )


def test_template_still_predicts_at_its_own_batch():
    template, parallel, _ = pair()
    x, _ = sequences(1)
    alone = stateful_lstm(PER_REPLICA)
    alone.set_weights(template.get_weights())
    parallel.predict(x, batch_size=GLOBAL, verbose=0)
    template.reset_states()
    np.testing.assert_allclose(
        template.predict(x[:PER_REPLICA], batch_size=PER_REPLICA, verbose=0),
        alone.predict(x[:PER_REPLICA], batch_size=PER_REPLICA, verbose=0),
        atol=ATOL,
    )


@pytest.mark.subprocess
def test_saved_template_loads_on_one_device_at_its_batch(tmp_path):
    template, parallel, _ = pair()
    x, y = sequences(1)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    parallel.fit(x, y, batch_size=GLOBAL, verbose=0)
    parallel.save(tmp_path / "stateful.keras")
    template.reset_states()
    expected = template.predict(x[:PER_REPLICA], batch_size=PER_REPLICA, verbose=0)
    np.save(tmp_path / "x.npy", x[:PER_REPLICA])
    np.save(tmp_path / "expected.npy", expected)
    testing.run_python(
        f"""
        import keras, numpy as np
        model = keras.models.load_model({str(tmp_path / "stateful.keras")!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        np.testing.assert_allclose(
            model.predict(x, batch_size={PER_REPLICA}, verbose=0),
            np.load({str(tmp_path / "expected.npy")!r}), atol=1e-5)
        """
    )
