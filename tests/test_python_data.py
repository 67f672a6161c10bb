# SPDX-License-Identifier: Apache-2.0
"""Python generators and PyDatasets are read as on one device: one batch per step.

Counts and logs come from the user's own code (a generator's counter, a
`PyDataset`'s `__getitem__`), compared with the template on one device driven
the same way and with Keras 2.2.4's own `test_model_methods` bounds.
"""

import keras
import numpy as np
import pytest

import parallel_keras

ATOL = 1e-5
ROWS = 64
_RNG = np.random.RandomState(0)
X = _RNG.rand(ROWS, 3).astype("float32")
Y = _RNG.rand(ROWS, 1).astype("float32")


def _model() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
    )


def _network(gpus: int):
    """(template, model to drive): the template itself on one device."""
    template = _model()
    network = parallel_keras.multi_gpu_model(template, gpus=gpus) if gpus > 1 else template
    network.compile(keras.optimizers.SGD(0.1), "mse")
    return template, network


def _counting(reads: list, batch: int = 4, cycle: int = ROWS):
    """An endless generator over the rows; `reads` gets one entry per batch read."""
    index = 0
    while True:
        reads.append(index)
        start = (index * batch) % cycle
        yield X[start : start + batch], Y[start : start + batch]
        index += 1


def _finite(batches: int, batch: int = 4, offset: int = 0):
    """One pass over `batches` batches, as a `tf.data`-style validation source."""
    for index in range(batches):
        start = offset + index * batch
        yield X[start : start + batch], Y[start : start + batch]


class LoggedSequence(keras.utils.PyDataset):
    """Keras 2.2.4's `RandomSequence`, with fixed rows: logs every index read.

    `on_epoch_end` doubles the batch size when `grow` is set, so a batch read
    before it (ahead of its step) has other rows.
    """

    def __init__(self, length: int, batch: int = 4, grow: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.length, self.batch, self.grow = length, batch, grow
        self.logs: list[tuple[int, int]] = []

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        self.logs.append((index, self.batch))
        start = (index * self.batch) % ROWS
        return X[start : start + self.batch], Y[start : start + self.batch]

    def on_epoch_end(self):
        if self.grow:
            self.batch = min(self.batch * 2, 16)


@pytest.mark.parametrize("gpus", [2, 4])
def test_generators_are_read_once_per_step_as_keras2_counts(gpus):
    """Keras 2.2.4 `test_model_methods`: `fit_generator(gen, epochs=3,
    steps_per_epoch=2, validation_data=gen, validation_steps=1)` reads the
    training generator 6 to 10 times. The replicas read what the steps
    consume, where tf.distribute read 11 and 8 (one device: 7 and 2, tf.data
    prefetching one), with one device's numbers."""
    counts, histories, weights = [], [], []
    for replicas in (1, gpus):
        template, network = _network(replicas)
        train_reads, validation_reads = [], []
        history = network.fit(
            _counting(train_reads),
            epochs=3,
            steps_per_epoch=2,
            validation_data=_counting(validation_reads),
            validation_steps=1,
            verbose=0,
        ).history
        counts.append((len(train_reads), len(validation_reads)))
        histories.append(history)
        weights.append(template.get_weights())
    # Exactly the 6 batches trained on (Keras 3 peeks at 2 and re-yields
    # them), and for validation only the 2 peeked at (each evaluation starts
    # over with them, on one device too).
    assert counts[1] == (3 * 2, 2)
    assert 3 * 2 <= counts[1][0] <= 3 * 2 + 2 * 2  # Keras 2.2.4's bounds
    assert counts[1][0] <= counts[0][0] and counts[1][1] <= counts[0][1]
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(histories[1][key], histories[0][key], atol=ATOL)
    for trained, expected in zip(weights[1], weights[0]):
        np.testing.assert_allclose(trained, expected, atol=ATOL)


@pytest.mark.parametrize("gpus", [2, 4])
def test_a_validation_sequence_is_read_as_on_one_device(gpus):
    """Keras 2.2.4: `fit_generator(RandomSequence(3), steps_per_epoch=3,
    epochs=5, validation_data=val_seq, validation_steps=3)` reads at most
    4 * 5 validation batches. The replicas read the 2 Keras peeks at for the
    element spec, then each evaluation's 3: 17, where tf.distribute read 41
    (one device: 22, tf.data prefetching the 4th), with one device's
    `val_loss`."""
    logs, histories = [], []
    for replicas in (1, gpus):
        _, network = _network(replicas)
        validation = LoggedSequence(4)
        history = network.fit(
            LoggedSequence(4),
            steps_per_epoch=3,
            epochs=5,
            validation_data=validation,
            validation_steps=3,
            verbose=0,
        ).history
        logs.append(validation.logs)
        histories.append(history["val_loss"])
    assert [index for index, _ in logs[1]] == [0, 1] + [0, 1, 2] * 5
    assert len(logs[1]) <= min(4 * 5, len(logs[0]))
    np.testing.assert_allclose(histories[1], histories[0], atol=ATOL)


@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
@pytest.mark.parametrize("gpus", [2, 4])
@pytest.mark.parametrize("source", ["finite", "endless"])
def test_a_validation_generator_gives_one_devices_val_loss_every_epoch(gpus, source):
    """`fit(..., validation_data=generator, validation_steps=k)` over
    several epochs (TensorFlow's DNN correctness test with a generator): each
    evaluation starts a new iterator, which re-yields the 2 batches Keras
    peeked at, then continues the generator (a finite one is spent after the
    first epoch). The replicas had continued one stream, as Keras 2 did."""

    def validation():
        if source == "finite":
            return _finite(5, offset=32)  # One pass, as TF's validation dataset.
        return _counting([], cycle=20)

    histories = []
    for replicas in (1, gpus):
        _, network = _network(replicas)
        histories.append(
            network.fit(
                X[:32],
                Y[:32],
                batch_size=8,
                epochs=3,
                shuffle=False,
                validation_data=validation(),
                validation_steps=5 if source == "finite" else 2,
                verbose=0,
            ).history["val_loss"]
        )
    np.testing.assert_allclose(histories[1], histories[0], atol=ATOL)


@pytest.mark.parametrize("gpus", [2, 4])
def test_a_sequence_changing_its_batch_size_at_epoch_end_is_read_at_each_step(gpus):
    """A Sequence whose `on_epoch_end` changes its batch size, trained with
    `steps_per_epoch` shorter than it: each batch is read when its step
    runs, after the epoch-end change before it, and trains exactly those
    rows (one device, step by step, on the batches read). tf.distribute had
    read the next epoch's batches before the change; one device's tf.data
    prefetch reads one of them before or after it, depending on timing."""
    template, network = _network(gpus)
    sequence = LoggedSequence(4, grow=True)
    network.fit(sequence, steps_per_epoch=2, epochs=3, shuffle=False, verbose=0)
    # 2 reads for the element spec; Keras calls `on_epoch_end` once before
    # the first epoch (4 -> 8), then after each (8 -> 16).
    assert sequence.logs == [(0, 4), (1, 4), (0, 8), (1, 8), (2, 16), (3, 16), (0, 16), (1, 16)]
    reference, one_device = _network(1)
    for index, batch in sequence.logs[2:]:
        start = (index * batch) % ROWS
        one_device.train_on_batch(X[start : start + batch], Y[start : start + batch])
    for trained, expected in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(trained, expected, atol=ATOL)


@pytest.mark.parametrize("gpus", [2, 4])
def test_evaluate_and_predict_read_only_their_steps(gpus):
    """`evaluate(gen, steps=3)` and `predict(gen, steps=3)` (Keras 2's
    `evaluate_generator`/`predict_generator`) read 3 batches, with one
    device's results."""
    results, counts = [], []
    for replicas in (1, gpus):
        _, network = _network(replicas)
        evaluate_reads, predict_reads = [], []
        loss = network.evaluate(_counting(evaluate_reads), steps=3, verbose=0)
        predictions = network.predict(
            ((x,) for x, _ in _counting(predict_reads)), steps=3, verbose=0
        )
        results.append((loss, predictions))
        counts.append((len(evaluate_reads), len(predict_reads)))
    assert counts[1] == (3, 3)
    assert counts[1][0] <= counts[0][0] and counts[1][1] <= counts[0][1]
    np.testing.assert_allclose(results[1][0], results[0][0], atol=ATOL)
    np.testing.assert_allclose(results[1][1], results[0][1], atol=ATOL)


@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
@pytest.mark.parametrize("gpus", [2, 4])
def test_a_sequence_with_workers_and_validation_freq_matches_one_device(gpus):
    """A `PyDataset` read by Keras's enqueuer threads (`workers=2`, Keras 2's
    `fit_generator(workers=2)`) and a validation generator evaluated every
    second epoch (`validation_freq=2`) give one device's history."""
    histories, weights = [], []
    for replicas in (1, gpus):
        template, network = _network(replicas)
        histories.append(
            network.fit(
                LoggedSequence(4, workers=2),
                epochs=4,
                validation_data=_counting([], cycle=20),
                validation_steps=2,
                validation_freq=2,
                verbose=0,
            ).history
        )
        weights.append(template.get_weights())
    assert histories[1].keys() == histories[0].keys()
    for key in histories[0]:
        np.testing.assert_allclose(histories[1][key], histories[0][key], atol=ATOL)
    for trained, expected in zip(weights[1], weights[0]):
        np.testing.assert_allclose(trained, expected, atol=ATOL)
