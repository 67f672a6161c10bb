# SPDX-License-Identifier: Apache-2.0
"""Losses and metrics over the whole batch, as Keras 2's parallel model computed them."""

import keras
import numpy as np
import pytest
from keras import ops

import parallel_keras

ATOL = 1e-5


def cox_partial_likelihood(y_true, y_pred):
    """Negative Cox partial log-likelihood (Breslow, no ties) over the batch.

    `y_true[:, 0]` is the survival time, `y_true[:, 1]` the event flag; each
    row's risk set is every row of the *batch* still at risk, so the value
    depends on which rows share the batch.
    """
    time, event = y_true[:, 0], y_true[:, 1]
    risk = y_pred[:, 0]
    at_risk = ops.cast(time[None, :] >= time[:, None], risk.dtype)
    log_risk_set = ops.log(ops.sum(at_risk * ops.exp(risk)[None, :], axis=1))
    return -ops.sum((risk - log_risk_set) * event) / ops.maximum(ops.sum(event), 1.0)


def batch_hard_triplet(y_true, y_pred, margin=0.5):
    """Batch-hard triplet loss: hardest positive and negative within the batch."""
    labels = y_true[:, 0]
    squared = ops.sum(ops.square(y_pred[:, None, :] - y_pred[None, :, :]), axis=-1)
    distance = ops.sqrt(squared + 1e-9)
    same = ops.cast(ops.equal(labels[:, None], labels[None, :]), distance.dtype)
    hardest_positive = ops.max(distance * same, axis=1)
    hardest_negative = ops.min(distance + 1e3 * same, axis=1)
    return ops.mean(ops.relu(hardest_positive - hardest_negative + margin))


def concordance_index(y_true, y_pred):
    """Harrell's C-index over the batch (a metric that is not a per-row mean)."""
    time, event = y_true[:, 0], y_true[:, 1]
    risk = y_pred[:, 0]
    comparable = ops.cast(time[:, None] < time[None, :], risk.dtype) * event[:, None]
    concordant = ops.cast(risk[:, None] > risk[None, :], risk.dtype)
    return ops.sum(comparable * concordant) / ops.maximum(ops.sum(comparable), 1.0)


def model(outputs, seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(6, activation="tanh"), keras.layers.Dense(outputs)]
    )


def survival_data(rows=32):
    rng = np.random.RandomState(0)
    x = rng.rand(rows, 5).astype("float32")
    y = np.stack([rng.permutation(rows) + 1.0, rng.rand(rows) < 0.7], axis=1).astype("float32")
    return x, y


def triplet_data(rows=32):
    rng = np.random.RandomState(1)
    return rng.rand(rows, 5).astype("float32"), rng.randint(0, 3, (rows, 1)).astype("float32")


CASES = {
    "cox": (survival_data, 1, cox_partial_likelihood, [concordance_index]),
    "triplet": (triplet_data, 3, batch_hard_triplet, []),
}


# Only "global": `batch_loss="auto"` resolves at compile (asserted for these
# losses in test_auto_keeps_the_fast_path_for_keras_losses) and then trains
# through the same steps, which read nothing but the resolved mode.
@pytest.mark.parametrize("case", sorted(CASES))
def test_batch_dependent_losses_match_one_device(case):
    data, outputs, loss, metrics = CASES[case]
    x, y = data()
    reference = model(outputs, seed=9)
    reference.compile(keras.optimizers.SGD(0.05), loss, metrics=metrics)
    expected = reference.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history

    template = model(outputs, seed=9)
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, batch_loss="global")
    parallel.compile(keras.optimizers.SGD(0.05), loss, metrics=metrics)
    assert parallel.batch_loss == "global"
    history = parallel.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history

    for a, b in zip(reference.get_weights(), template.get_weights()):
        np.testing.assert_allclose(a, b, atol=ATOL)
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-4, err_msg=name)
    np.testing.assert_allclose(
        parallel.evaluate(x, y, batch_size=16, verbose=0),
        reference.evaluate(x, y, batch_size=16, verbose=0),
        atol=1e-4,
    )


def test_per_replica_loss_differs_for_a_batch_dependent_loss():
    """Why the option exists: on slices of 4 rows the Cox loss is another loss."""
    x, y = survival_data()
    reference = model(1, seed=9)
    reference.compile(keras.optimizers.SGD(0.05), cox_partial_likelihood)
    reference.fit(x, y, batch_size=16, shuffle=False, verbose=0)
    template = model(1, seed=9)
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, batch_loss="replica")
    parallel.compile(keras.optimizers.SGD(0.05), cox_partial_likelihood)
    parallel.fit(x, y, batch_size=16, shuffle=False, verbose=0)
    difference = max(
        float(np.abs(a - b).max()) for a, b in zip(reference.get_weights(), template.get_weights())
    )
    assert difference > 1e-4


@pytest.mark.parametrize(
    "loss, metrics, expected",
    [
        ("mse", ["mae"], "replica"),
        (keras.losses.MeanSquaredError(), [keras.metrics.AUC()], "replica"),
        ({"dense_1": "mse"}, None, "replica"),
        (cox_partial_likelihood, None, "global"),
        (batch_hard_triplet, None, "global"),
        ("mse", [concordance_index], "global"),
    ],
)
def test_auto_keeps_the_fast_path_for_keras_losses(loss, metrics, expected):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5,))
    template = keras.Model(inputs, keras.layers.Dense(1, name="dense_1")(inputs))
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    assert parallel.batch_loss == "auto"
    parallel.compile("sgd", loss, metrics=metrics)
    assert parallel.batch_loss == expected


class _BatchLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.train, self.test = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.train.append(dict(logs))

    def on_test_batch_end(self, batch, logs=None):
        self.test.append(dict(logs))


@pytest.mark.parametrize("batch_size", [16, 6])
def test_per_batch_logs_are_one_devices(batch_size):
    """Every on_*_batch_end log (the progress bar's numbers), not only the epoch's."""
    x, y = survival_data()
    logs = []
    for replicated in (False, True):
        template = model(1, seed=9)
        network = (
            parallel_keras.multi_gpu_model(template, gpus=4, batch_loss="global")
            if replicated
            else template
        )
        network.compile(
            keras.optimizers.SGD(0.05), cox_partial_likelihood, metrics=[concordance_index]
        )
        callback = _BatchLogs()
        network.fit(
            x,
            y,
            batch_size=batch_size,
            shuffle=False,
            verbose=0,
            validation_data=(x, y),
            callbacks=[callback],
        )
        logs.append(callback)
    expected, got = logs
    assert len(got.train) == len(expected.train) and len(got.test) == len(expected.test)
    for kind in ("train", "test"):
        for step, (a, b) in enumerate(zip(getattr(got, kind), getattr(expected, kind))):
            assert sorted(a) == sorted(b)
            for name in b:
                np.testing.assert_allclose(
                    a[name], b[name], atol=1e-4, err_msg=f"{kind} {step} {name}"
                )
