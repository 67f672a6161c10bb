# SPDX-License-Identifier: Apache-2.0
"""Dict data read by the model's input and output names, as Keras 2 read it.

Keras 2 (training_utils.standardize_input_data) fed a functional model's
inputs from a dict by name and ignored keys no input has (Keras 2's
image_ocr example yields a `source_str` of strings); every value here is
compared with the same model trained on exactly the right arrays.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import logging

import parallel_keras
from parallel_keras import compat

ROWS, BATCH = 16, 8


def ctc_like(seed=3):
    """Two named inputs, one output named 'ctc' computing a per-row loss."""
    keras.utils.set_random_seed(seed)
    image = keras.Input((5,), name="the_input")
    labels = keras.Input((2,), name="the_labels")
    prediction = keras.layers.Dense(2, name="softmax")(image)
    loss = keras.layers.Lambda(
        lambda args: keras.ops.sum(keras.ops.square(args[0] - args[1]), axis=1, keepdims=True),
        name="ctc",
    )([prediction, labels])
    return keras.Model([image, labels], loss)


def arrays(seed=0):
    rng = np.random.RandomState(seed)
    image = rng.rand(ROWS, 5).astype("float32")
    labels = rng.rand(ROWS, 2).astype("float32")
    words = np.array([f"word{i}" for i in range(ROWS)])
    return image, labels, words


def dict_batches(image, labels, words):
    """The image_ocr idiom: dicts with a key (strings) no input has."""
    for start in range(0, ROWS, BATCH):
        rows = slice(start, start + BATCH)
        inputs = {
            "the_input": image[rows],
            "the_labels": labels[rows],
            "source_str": words[rows],
        }
        yield inputs, {"ctc": np.zeros([BATCH], "float32")}


def compile_ctc(model):
    model.compile(loss={"ctc": lambda y_true, y_pred: y_pred}, optimizer=keras.optimizers.SGD(0.1))


def reference_weights():
    """One device, only the right keys, as tuples: Keras 3's own spelling."""
    image, labels, _ = arrays()
    model = ctc_like()
    compile_ctc(model)
    model.fit(
        (image, labels), np.zeros([ROWS], "float32"), batch_size=BATCH, shuffle=False, verbose=0
    )
    return model.get_weights()


def assert_weights_equal(model, expected):
    for got, want in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("gpus", [1, pytest.param(4, marks=pytest.mark.slow)])
def test_dict_batches_with_an_extra_string_key_train_as_the_right_keys(gpus):
    expected = reference_weights()
    template = ctc_like()
    model = parallel_keras.multi_gpu_model(template, gpus=gpus) if gpus > 1 else template
    compile_ctc(model)
    if gpus > 1:  # The parallel model reads dicts by name itself.
        model.fit(dict_batches(*arrays()), steps_per_epoch=2, verbose=0)
    else:  # The plain model through the compat function migrate writes.
        model.fit(
            compat.named_batches(model, dict_batches(*arrays())), steps_per_epoch=2, verbose=0
        )
    assert_weights_equal(template, expected)


def test_plain_keras_fails_on_the_same_batches():
    # What the compat path is for: Keras 3 converts every key of the dict.
    model = ctc_like()
    compile_ctc(model)
    with pytest.raises(ValueError, match="Invalid dtype"):
        model.fit(dict_batches(*arrays()), steps_per_epoch=2, verbose=0)


def test_compat_fit_generator_reads_dict_batches_by_name():
    expected = reference_weights()
    model = ctc_like()
    compile_ctc(model)
    compat.fit_generator(model, dict_batches(*arrays()), 2, verbose=0)
    assert_weights_equal(model, expected)


@pytest.mark.parametrize(
    "kind", ["arrays", pytest.param("dataset", marks=pytest.mark.slow), "sequence"]
)
def test_parallel_model_reads_dicts_of_arrays_datasets_and_sequences_by_name(kind):
    expected = reference_weights()
    image, labels, words = arrays()
    template = ctc_like()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    compile_ctc(parallel)
    inputs = {"the_labels": labels, "the_input": image, "source_str": words}
    targets = {"ctc": np.zeros([ROWS], "float32")}
    if kind == "arrays":
        parallel.fit(inputs, targets, batch_size=BATCH, shuffle=False, verbose=0)
    elif kind == "dataset":
        dataset = tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(BATCH)
        parallel.fit(dataset, verbose=0)
    else:

        class Batches(keras.utils.Sequence):
            def __len__(self):
                return ROWS // BATCH

            def __getitem__(self, index):
                rows = slice(index * BATCH, (index + 1) * BATCH)
                return {key: value[rows] for key, value in inputs.items()}, {
                    "ctc": targets["ctc"][rows]
                }

        parallel.fit(Batches(), shuffle=False, verbose=0)
    assert_weights_equal(template, expected)


@pytest.mark.slow
def test_predict_and_on_batch_methods_read_dicts_by_name():
    image, labels, words = arrays()
    template = ctc_like()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    compile_ctc(parallel)
    inputs = {"the_input": image, "the_labels": labels, "source_str": words}
    expected = template.predict((image, labels), verbose=0)
    np.testing.assert_allclose(parallel.predict(inputs, verbose=0), expected, rtol=1e-6)
    batches = (batch[0] for batch in dict_batches(image, labels, words))
    np.testing.assert_allclose(parallel.predict(batches, steps=2, verbose=0), expected, rtol=1e-6)
    loss = parallel.test_on_batch(inputs, {"ctc": np.zeros([ROWS], "float32")})
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)


def test_dropped_keys_are_logged_once(monkeypatch):
    messages = []
    monkeypatch.setattr(logging, "info", lambda message, *args: messages.append(message % args))
    model = ctc_like()
    compile_ctc(model)
    model.fit(compat.named_batches(model, dict_batches(*arrays())), steps_per_epoch=2, verbose=0)
    dropped = [message for message in messages if "'source_str'" in message]
    assert len(dropped) == 1 and "not fed (as in Keras 2)" in dropped[0]


def test_a_dict_missing_an_input_is_refused_with_the_fix():
    image, _, words = arrays()
    template = ctc_like()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    compile_ctc(parallel)
    before = template.get_weights()
    with pytest.raises(ValueError) as error:
        parallel.fit({"the_input": image, "source_str": words}, np.zeros([ROWS]), verbose=0)
    message = str(error.value)
    assert "lacks ['the_labels']" in message
    assert "Received: keys ['source_str', 'the_input']" in message
    assert "`name=` of each `Input`" in message
    assert_weights_equal(template, before)


def two_outputs(seed=5):
    """Two named inputs, two named outputs sharing a hidden layer."""
    keras.utils.set_random_seed(seed)
    a = keras.Input((3,), name="input_a")
    b = keras.Input((3,), name="input_b")
    hidden = keras.layers.Dense(5, activation="tanh", name="hidden")(
        keras.layers.Concatenate(name="joined")([a, b])
    )
    return keras.Model(
        [a, b],
        [keras.layers.Dense(4, name="out_a")(hidden), keras.layers.Dense(3, name="out_b")(hidden)],
    )


class WeightedBatches(keras.utils.PyDataset):
    """`length` batches of `(x, y, sample_weight)`, as dicts by name or as tuples."""

    def __init__(self, length, as_dicts, seed=4):
        super().__init__()
        self.length, self.as_dicts = length, as_dicts
        rng = np.random.RandomState(seed)
        rows = length * BATCH
        self.columns = {
            "input_a": rng.rand(rows, 3).astype("float32"),
            "input_b": rng.rand(rows, 3).astype("float32"),
            "out_a": rng.rand(rows, 4).astype("float32"),
            "out_b": rng.rand(rows, 3).astype("float32"),
            "weight_a": rng.rand(rows).astype("float32"),
            "weight_b": rng.rand(rows).astype("float32"),
        }
        self.epochs_ended = 0

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rows = slice(index * BATCH, (index + 1) * BATCH)
        c = {key: value[rows] for key, value in self.columns.items()}
        if not self.as_dicts:
            return (
                (c["input_a"], c["input_b"]),
                (c["out_a"], c["out_b"]),
                (
                    c["weight_a"],
                    c["weight_b"],
                ),
            )
        return (
            {"input_b": c["input_b"], "input_a": c["input_a"]},
            {"out_b": c["out_b"], "out_a": c["out_a"]},
            {"out_a": c["weight_a"], "out_b": c["weight_b"]},
        )

    def on_epoch_end(self):
        self.epochs_ended += 1


def fit_repeated(model, as_dicts):
    """Keras 2's `fit_generator(seq, steps_per_epoch=3, validation_data=val,
    validation_steps=2)` as migrate writes it: 3 of 4 batches per epoch,
    each epoch going on where the last stopped."""
    model.compile(keras.optimizers.SGD(0.2), ["mse", "mse"], loss_weights=[1.0, 0.5], metrics=None)
    training, validation = WeightedBatches(4, as_dicts), WeightedBatches(3, as_dicts, seed=6)
    history = model.fit(
        parallel_keras.repeat_sequence(training, 3),
        epochs=3,
        validation_data=parallel_keras.repeat_sequence(validation, 2),
        verbose=0,
    )
    return history.history, training.epochs_ended


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [2, 4])
def test_a_repeated_sequence_of_dict_batches_trains_each_epoch_on_the_next_batches(gpus):
    # The dict reading wraps every Sequence; its epoch hooks are the
    # Sequence's own, so `repeat_sequence` moves on to batches 3, 4, 5 ...
    # in epoch 2 as on one device (it read batches 0-2 every epoch before).
    reference = two_outputs()
    expected, expected_ends = fit_repeated(reference, as_dicts=False)
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    got, ends = fit_repeated(parallel, as_dicts=True)
    assert ends == expected_ends
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert_weights_equal(template, reference.get_weights())


def test_the_dict_reading_of_a_sequence_keeps_its_whole_pydataset_protocol():
    calls = []

    class Endless(keras.utils.PyDataset):
        def __init__(self):
            super().__init__(workers=3, use_multiprocessing=True, max_queue_size=7)
            self.note = "own attribute"

        @property
        def num_batches(self):
            return None

        def __getitem__(self, index):
            return {"the_input": np.zeros((1, 5)), "the_labels": np.zeros((1, 2))}, None

        def on_epoch_begin(self):
            calls.append("begin")

        def on_epoch_end(self):
            calls.append("end")

    model = ctc_like()
    sequence = Endless()
    wrapped = compat.named_batches(model, sequence)
    assert isinstance(wrapped, keras.utils.PyDataset) and wrapped is not sequence
    # Every public part of Keras's PyDataset is the wrapped sequence's own.
    public = {name for name in dir(keras.utils.PyDataset) if not name.startswith("_")}
    for name in public - {"on_epoch_begin", "on_epoch_end"}:
        assert getattr(wrapped, name) == getattr(sequence, name), name
    wrapped.on_epoch_begin()
    wrapped.on_epoch_end()
    assert calls == ["begin", "end"]
    assert wrapped.note == "own attribute"
    x, _ = wrapped[0]
    assert isinstance(x, tuple) and len(x) == 2  # read by name, in input order


def dict_columns(rows=ROWS, seed=8):
    rng = np.random.RandomState(seed)
    return {
        "input_a": rng.rand(rows, 3).astype("float32"),
        "input_b": rng.rand(rows, 3).astype("float32"),
        "extra": np.array([f"row{i}" for i in range(rows)]),  # no input has it
        "out_a": rng.randint(0, 3, (rows, 4)).astype("float32"),
        "out_b": rng.rand(rows, 3).astype("float32"),
        "weight_a": rng.rand(rows).astype("float32"),
        "weight_b": rng.rand(rows).astype("float32"),
    }


CLASSES = {"out_a": {0: 1.0, 1: 2.0, 2: 0.5, 3: 1.5}}


def as_dicts(c, weighting):
    """`(x, y[, sample_weight])` as dicts by name, in another key order."""
    x = {"extra": c["extra"], "input_b": c["input_b"], "input_a": c["input_a"]}
    y = {"out_b": c["out_b"], "out_a": c["out_a"]}
    if weighting == "class":
        return x, y
    return x, y, {"out_b": c["weight_b"], "out_a": c["weight_a"]}


@pytest.mark.parametrize(
    "gpus, kind, weighting",
    [
        (2, "arrays", "sample"),
        pytest.param(4, "arrays", "class", marks=pytest.mark.slow),
        pytest.param(2, "generator", "sample", marks=pytest.mark.slow),
        pytest.param(4, "sequence", "class", marks=pytest.mark.slow),
        pytest.param(4, "dataset", "sample", marks=pytest.mark.slow),
    ],
)
def test_dicts_of_inputs_targets_and_weights_train_as_their_arrays_on_one_device(
    gpus, kind, weighting
):
    # Keras 2: fit(dict, dict, sample_weight=dict) or class_weight={output:
    # {class: weight}}; the sample weights win where both are given, and a
    # class weight weighs each row by its class (Keras 2's standardize_weights).
    c = dict_columns()
    if weighting == "class":
        classes = c["out_a"].argmax(axis=-1)
        weights = (np.array([CLASSES["out_a"][k] for k in classes], "float32"), None)
    else:
        weights = (c["weight_a"], c["weight_b"])
    ones = np.ones(ROWS, "float32")
    reference = two_outputs()
    reference.compile(keras.optimizers.SGD(0.2), ["mse", "mse"], loss_weights=[1.0, 0.5])
    reference.fit(
        (c["input_a"], c["input_b"]),
        (c["out_a"], c["out_b"]),
        sample_weight=tuple(ones if w is None else w for w in weights),
        batch_size=BATCH,
        shuffle=False,
        epochs=2,
        verbose=0,
    )
    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(keras.optimizers.SGD(0.2), "mse", loss_weights=[1.0, 0.5])
    keywords = {"class_weight": CLASSES} if weighting == "class" else {}
    batches = [
        as_dicts({key: value[start : start + BATCH] for key, value in c.items()}, weighting)
        for start in range(0, ROWS, BATCH)
    ]
    if kind == "arrays":
        x, y, *sample_weight = as_dicts(c, weighting)
        if sample_weight:
            keywords["sample_weight"] = sample_weight[0]
        parallel.fit(x, y, batch_size=BATCH, shuffle=False, epochs=2, verbose=0, **keywords)
    elif kind == "generator":
        parallel.fit(
            (batch for _ in range(2) for batch in batches),
            steps_per_epoch=len(batches),
            epochs=2,
            verbose=0,
            **keywords,
        )
    elif kind == "sequence":

        class Batches(keras.utils.Sequence):
            def __len__(self):
                return len(batches)

            def __getitem__(self, index):
                return batches[index]

        parallel.fit(Batches(), shuffle=False, epochs=2, verbose=0, **keywords)
    else:
        dataset = tf.data.Dataset.from_tensor_slices(as_dicts(c, weighting)).batch(BATCH)
        parallel.fit(dataset, epochs=2, verbose=0, **keywords)
    assert_weights_equal(template, reference.get_weights())
