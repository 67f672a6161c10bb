# SPDX-License-Identifier: Apache-2.0
"""Keras's own trainer and callback tests, run on the parallel model.

Each case re-expresses a test of Keras 3.15's `keras/src/trainers/
trainer_test.py` and `keras/src/callbacks/*_test.py` (`k3_*`), or of Keras
2.2.4's `tests/keras/engine/test_training.py` and `tests/keras/
test_callbacks.py` and 2.3.1's callback-count tests (`k2_*`), as a script
would meet them: the upstream model is built twice with the same weights,
one copy is wrapped with `multi_gpu_model(gpus=2 or 4)` and driven in the
Keras 2 spelling (with only the translations docs/migrate.md tells a user to
make), the other is driven on one device the Keras 3 way. The case asserts
what upstream asserts, and everything it returns (History, `*_on_batch`
results, evaluate, predictions, callback records) and the final weights must
match to 1e-5.

Upstream cases a Keras 2 script cannot exercise (JAX/torch backends,
`steps_per_execution`, `jit_compile`, custom `train_step`, sparse and
ragged inputs, symbolic target tensors, `BackupAndRestore`, `SwapEMAWeights`,
Orbax, `RemoteMonitor`) are left out; docs/data-parallelism.md lists them.
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from collections.abc import Callable

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras.callbacks import EarlyStopping as Keras2EarlyStopping
from parallel_keras.callbacks import ModelCheckpoint as Keras2ModelCheckpoint

ATOL = 1e-5
# Every case runs on 4 replicas: 10 rows split 3/3/3/1, the uneven split
# that weights slices and pads the last one. 2 replicas (an even split) add
# coverage only where the data path is under test: the cases named
# `k2_model_*` and `k2_with_*` (Keras 2's test_training.py) and the ones in
# TWO_REPLICA_CASES. Callback and control-flow cases read the same losses on
# either count, so their 2-replica runs (about a third of the suite's time)
# are left out.
GPUS = (2, 4)
TWO_REPLICA_CASES = frozenset(
    {
        "k3_fit_flow",
        "k3_evaluate_flow",
        "k3_predict_flow",
        "k3_on_batch_methods",
        "k3_loss_weights",
        "k3_partial_loss_partial_label",
        "k3_nested_inputs",
        "k2_pandas_dataframe",
    }
)


def _replica_counts(name: str) -> tuple[int, ...]:
    if name.startswith(("k2_model_", "k2_with_")) or name in TWO_REPLICA_CASES:
        return GPUS
    return (4,)


# name -> (build, drive, slow)
CASES: dict[str, tuple[Callable, Callable, bool]] = {}
# (name, gpus) -> reason: an open failure (strict, so it is noticed when it
# passes). docs/data-parallelism.md lists them.
EXPECTED_FAILURES: dict[tuple[str, int | None], str] = {}

# Open differences that do not show in every run: reported as xfail or
# xpass, never as passing (docs/data-parallelism.md lists them).
INTERMITTENT_FAILURES: dict[tuple[str, int | None], str] = {}


def case(build: Callable, slow: bool = False):
    def register(drive):
        CASES[drive.__name__] = (build, drive, slow)
        return drive

    return register


# --- Models and data -----------------------------------------------------------


def mlp():
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )


def classifier(classes=3):
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(6, activation="relu"),
            keras.layers.Dense(classes, activation="softmax"),
        ]
    )


def keras2_two_io():
    """Keras 2.2.4 test_model_methods' model: `dense_1` on `input_a`, a
    `dropout` output on `input_b`."""
    a = keras.Input((3,), name="input_a")
    b = keras.Input((3,), name="input_b")
    dense = keras.layers.Dense(4, name="dense_1")(a)
    dropped = keras.layers.Dropout(0.5, name="dropout")(b)
    return keras.Model([a, b], [dense, dropped])


def two_dense_outputs():
    a = keras.Input((3,), name="input_a")
    b = keras.Input((3,), name="input_b")
    hidden = keras.layers.Dense(5, activation="tanh", name="hidden")(
        keras.layers.Concatenate(name="joined")([a, b])
    )
    return keras.Model(
        [a, b],
        [
            keras.layers.Dense(4, name="out_a")(hidden),
            keras.layers.Dense(3, name="out_b")(hidden),
        ],
    )


def rows(count=10, width=4, seed=0):
    return np.random.RandomState(seed).rand(count, width).astype("float32")


def labels(count=10, classes=3, seed=1):
    return keras.utils.to_categorical(
        np.random.RandomState(seed).randint(0, classes, count), classes
    )


def two_io_data(count=10, seed=2):
    rng = np.random.RandomState(seed)
    return (
        [rng.rand(count, 3).astype("float32"), rng.rand(count, 3).astype("float32")],
        [rng.rand(count, 4).astype("float32"), rng.rand(count, 3).astype("float32")],
    )


def on_batch(model, method, *args, **kwargs):
    model.reset_metrics()  # one batch's own logs on every Keras (see helpers.one_device_on_batch)
    return getattr(model, method)(*args, **kwargs)


def history(fit_result):
    return dict(fit_result.history)


class Counter(keras.callbacks.Callback):
    """Counts each callback method (Keras 2.3.1's callbacks_test.Counter)."""

    METHODS = [
        f"on_{stage}_{event}"
        for stage in ("train", "test", "predict")
        for event in ("begin", "end", "batch_begin", "batch_end")
    ] + ["on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end"]

    def __init__(self):
        super().__init__()
        self.counts = defaultdict(int)
        for name in self.METHODS:
            setattr(self, name, self._counting(name, getattr(self, name)))

    def _counting(self, name, method):
        def counted(*args, **kwargs):
            self.counts[name] += 1
            return method(*args, **kwargs)

        return counted


class Recorder(keras.callbacks.Callback):
    """What a callback sees: epochs, batches, log keys and epoch logs."""

    def __init__(self):
        super().__init__()
        self.epochs, self.batches, self.batch_keys, self.epoch_logs = [], [], set(), []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append(batch)
        self.batch_keys |= set(logs or {})

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_logs.append(dict(logs or {}))

    def record(self):
        return {
            "epochs": self.epochs,
            "batches": self.batches,
            "batch_keys": sorted(self.batch_keys),
            "epoch_logs": self.epoch_logs,
        }


# --- Keras 3: trainers/trainer_test.py ---------------------------------------------


@case(mlp)
def k3_fit_flow(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return history(
        model.fit(rows(), rows(seed=3)[:, :2], batch_size=4, epochs=2, shuffle=False, verbose=0)
    )


@case(mlp)
def k3_fit_with_val_split(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    result = history(
        model.fit(
            rows(12),
            rows(12, seed=3)[:, :2],
            batch_size=4,
            epochs=2,
            validation_split=0.25,
            shuffle=False,
            verbose=0,
        )
    )
    assert "val_mae" in result
    return result


@case(mlp)
def k3_evaluate_flow(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    x, y = rows(), rows(seed=3)[:, :2]
    as_list = model.evaluate(x, y, batch_size=4, verbose=0)
    as_dict = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert as_list == [as_dict["loss"], as_dict["mae"]]
    return [as_list, as_dict]


@case(mlp)
def k3_predict_flow(model, keras2):
    return [model.predict(rows(), batch_size=batch, verbose=0) for batch in (3, 4, 10)]


@case(mlp)
def k3_predict_preserve_order(model, keras2):
    x = np.arange(30, dtype="float32").reshape(-1, 1).repeat(4, axis=1) / 30
    predictions = model.predict(x, batch_size=7, verbose=0)
    np.testing.assert_allclose(predictions, model(x), atol=ATOL)
    return predictions


@case(mlp)
def k3_predict_generator(model, keras2):
    x = rows(12)

    def batches():
        for start in range(0, 12, 4):
            yield (x[start : start + 4],)

    return model.predict(batches(), verbose=0)


@case(mlp)
def k3_steps_per_epoch(model, keras2):
    import tensorflow as tf

    model.compile(keras.optimizers.SGD(0.1), "mse")
    dataset = (
        tf.data.Dataset.from_tensor_slices((rows(8), rows(8, seed=3)[:, :2])).batch(4).repeat()
    )
    recorder = Recorder()
    result = history(
        model.fit(dataset, steps_per_epoch=3, epochs=2, verbose=0, callbacks=[recorder])
    )
    assert recorder.batches == [0, 1, 2] * 2
    return [result, recorder.record()]


@case(mlp)
def k3_fit_with_different_batch_size_same_loss(model, keras2):
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x, y = rows(12), rows(12, seed=3)[:, :2]
    losses = [
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0).history["loss"][0]
        for batch in (2, 3, 12)
    ]
    np.testing.assert_allclose(losses, losses[0], atol=ATOL)
    return losses


@case(mlp)
def k3_evaluate_with_different_batch_size_same_loss(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = rows(12), rows(12, seed=3)[:, :2]
    losses = [model.evaluate(x, y, batch_size=batch, verbose=0) for batch in (2, 5, 12)]
    np.testing.assert_allclose(losses, losses[0], atol=ATOL)
    return losses


@case(mlp)
def k3_on_batch_methods(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    x, y = rows(6), rows(6, seed=3)[:, :2]
    return [
        on_batch(model, "train_on_batch", x, y),
        on_batch(model, "train_on_batch", x, y, return_dict=True),
        on_batch(model, "test_on_batch", x, y),
        on_batch(model, "test_on_batch", x, y, return_dict=True),
        model.predict_on_batch(x),
    ]


class TrainingFlag(keras.layers.Layer):
    def call(self, inputs, training=None):
        return inputs * 2.0 if training else inputs


@case(lambda: keras.Sequential([keras.Input((4,)), TrainingFlag(), keras.layers.Dense(2)]))
def k3_training_arg(model, keras2):
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x, y = rows(8), rows(8, seed=3)[:, :2]
    trained = model.fit(x, y, batch_size=4, epochs=1, verbose=0).history["loss"][0]
    evaluated = model.evaluate(x, y, batch_size=4, verbose=0)
    assert abs(trained - evaluated) > 1e-3  # the training flag reached the layer
    return [trained, evaluated, model.predict(x, verbose=0)]


@case(
    lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dropout(0.5), keras.layers.Dense(2)])
)
def k3_predict_dropout(model, keras2):
    first = model.predict(rows(), batch_size=3, verbose=0)
    np.testing.assert_allclose(first, model.predict(rows(), batch_size=3, verbose=0))
    return first


def _mean_error(y_true, y_pred):
    return keras.ops.mean(keras.ops.abs(y_true - y_pred), axis=-1)


@case(mlp)
def k3_evaluate_return_list_respect_metrics_order(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mse", _mean_error, "mae"])
    values = model.evaluate(rows(), rows(seed=3)[:, :2], batch_size=4, verbose=0)
    assert len(values) == 4
    np.testing.assert_allclose(values[0], values[1], atol=ATOL)
    np.testing.assert_allclose(values[2], values[3], atol=ATOL)
    return values


@case(two_dense_outputs)
def k3_nested_inputs(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), ["mse", "mse"])
    x, y = two_io_data()
    by_name = {"input_a": x[0], "input_b": x[1]}
    return [
        history(model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)),
        history(model.fit(by_name, y, batch_size=4, epochs=1, shuffle=False, verbose=0)),
        model.evaluate(x, y, batch_size=3, verbose=0),
        model.predict(by_name, batch_size=3, verbose=0),
    ]


@case(mlp)
def k3_validation_data_infinite_generator(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = rows(8), rows(8, seed=3)[:, :2]

    def forever():
        while True:
            for start in (0, 4):
                yield x[start : start + 4], y[start : start + 4]

    return history(
        model.fit(
            x,
            y,
            batch_size=4,
            epochs=2,
            shuffle=False,
            verbose=0,
            validation_data=forever(),
            validation_steps=2,
        )
    )


class _Stop(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 1:
            self.model.stop_training = True


@case(mlp)
def k3_stop_loop(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    recorder = Recorder()
    result = history(
        model.fit(
            rows(12),
            rows(12, seed=3)[:, :2],
            batch_size=4,
            epochs=3,
            verbose=0,
            shuffle=False,
            callbacks=[_Stop(), recorder],
        )
    )
    assert recorder.batches == [0, 1] and len(result["loss"]) == 1
    return result


@case(
    lambda: keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(2, kernel_constraint=keras.constraints.NonNeg())]
    )
)
def k3_constraints_are_applied(model, keras2):
    model.compile(keras.optimizers.SGD(1.0), "mse")
    model.fit(
        rows(), -np.ones((10, 2), "float32"), batch_size=4, epochs=2, shuffle=False, verbose=0
    )
    assert model.get_weights()[0].min() >= 0
    return model.get_weights()


class _LearningRateAtBatch(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.model.optimizer.learning_rate.assign(0.1 / (batch + 1))


@case(mlp)
def k3_callbacks_can_update_state_at_batch_boundary(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return history(
        model.fit(
            rows(12),
            rows(12, seed=3)[:, :2],
            batch_size=4,
            epochs=2,
            shuffle=False,
            verbose=0,
            callbacks=[_LearningRateAtBatch()],
        )
    )


@case(two_dense_outputs)
def k3_loss_weights(model, keras2):
    model.compile(
        keras.optimizers.SGD(0.1),
        {"out_a": "mse", "out_b": "mae"},
        loss_weights={"out_a": 0.3, "out_b": 2.0},
    )
    x, y = two_io_data()
    step = on_batch(model, "train_on_batch", x, y)
    np.testing.assert_allclose(step[0], 0.3 * step[1] + 2.0 * step[2], rtol=1e-5)
    result = history(model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0))
    return [step, result]


@case(two_dense_outputs)
def k3_partial_loss_partial_label(model, keras2):
    # Keras 2 (and Keras 3's test): a loss and targets for one output only.
    # Keras 3 on one device needs every output in a loss dict, and a list
    # of targets on list outputs.
    model.compile(keras.optimizers.SGD(0.1), {"out_a": "mse"} if keras2 else ["mse", None])
    x, y = two_io_data()
    targets = {"out_a": y[0]} if keras2 else [y[0], y[1]]
    return [
        history(model.fit(x, targets, batch_size=4, epochs=2, shuffle=False, verbose=0)),
        model.evaluate(x, targets, batch_size=4, verbose=0),
    ]


@case(mlp)
def k3_recompile(model, keras2):
    x, y = rows(), rows(seed=3)[:, :2]
    model.compile(keras.optimizers.SGD(0.1), "mse")
    first = history(model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False))
    model.compile(keras.optimizers.Adam(0.01), "mae", metrics=["mse"])
    second = history(model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False))
    return [first, second, model.evaluate(x, y, verbose=0)]


class _ActivityLoss(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(0.1 * keras.ops.mean(keras.ops.square(inputs)))
        return inputs


@case(
    lambda: keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), _ActivityLoss(), keras.layers.Dense(2)]
    )
)
def k3_internal_only_loss(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), loss=None)
    return history(
        model.fit(rows(), rows(seed=3)[:, :2], batch_size=4, epochs=2, shuffle=False, verbose=0)
    )


def nested():
    inner = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="relu")], name="inner"
    )
    inputs = keras.Input((4,))
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(inner(inputs)))


@case(nested)
def k3_nested_trainer_metrics(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy", metrics=["acc", "mae"])
    result = history(model.fit(rows(), labels(), batch_size=4, epochs=2, shuffle=False, verbose=0))
    return [
        result,
        [m.name for m in model.metrics],
        on_batch(model, "test_on_batch", rows(), labels()),
    ]


@case(classifier)
def k3_callback_methods_keys(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy", metrics=["acc"])
    recorder = Recorder()
    model.fit(
        rows(),
        labels(),
        batch_size=4,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=(rows(6), labels(6)),
        callbacks=[recorder],
    )
    assert recorder.batch_keys == {"acc", "loss"}
    return recorder.record()


# --- Keras 3: callbacks/*_test.py ----------------------------------------------


@case(classifier)
def k3_early_stopping(model, keras2):
    model.compile(keras.optimizers.SGD(0.5), "categorical_crossentropy", metrics=["acc"])
    stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05)
    return history(
        model.fit(
            rows(),
            labels(),
            batch_size=4,
            epochs=6,
            shuffle=False,
            verbose=0,
            validation_data=(rows(6, seed=4), labels(6, seed=5)),
            callbacks=[stopping],
        )
    )


@case(classifier)
def k3_early_stopping_restore_best_weights(model, keras2):
    model.compile(keras.optimizers.SGD(2.0), "categorical_crossentropy")
    stopping = keras.callbacks.EarlyStopping(monitor="loss", patience=2, restore_best_weights=True)
    result = history(
        model.fit(
            rows(), labels(), batch_size=5, epochs=5, shuffle=False, verbose=0, callbacks=[stopping]
        )
    )
    return [result, stopping.best_epoch]


@case(mlp)
def k3_lambda_callback(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    seen = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: seen.append(("epoch", epoch)),
        on_train_batch_end=lambda batch, logs: seen.append(("batch", batch, logs["loss"])),
        on_train_end=lambda logs: seen.append("end"),
    )
    model.fit(
        rows(),
        rows(seed=3)[:, :2],
        batch_size=4,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[callback],
    )
    return seen


@case(mlp)
def k3_learning_rate_scheduler(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    scheduler = keras.callbacks.LearningRateScheduler(lambda epoch: 1.0 / (1.0 + epoch))
    result = history(
        model.fit(
            rows(),
            rows(seed=3)[:, :2],
            batch_size=4,
            epochs=3,
            shuffle=False,
            verbose=0,
            callbacks=[scheduler],
        )
    )
    np.testing.assert_allclose(
        float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)), 1.0 / 3, atol=ATOL
    )
    return result


@case(mlp)
def k3_reduce_lr_on_plateau(model, keras2):
    model.compile(keras.optimizers.SGD(0.5), "mse")
    reduce = keras.callbacks.ReduceLROnPlateau(
        monitor="loss", factor=0.5, patience=0, min_delta=10.0
    )
    result = history(
        model.fit(
            rows(),
            rows(seed=3)[:, :2],
            batch_size=4,
            epochs=3,
            shuffle=False,
            verbose=0,
            callbacks=[reduce],
        )
    )
    # No epoch improves by 10 after the first: halved at each later epoch's end.
    np.testing.assert_allclose(result["learning_rate"], [0.5, 0.5, 0.25], atol=ATOL)
    return result


def _csv_rows(path):
    with open(path) as file:
        return [
            {key: value if value == "NA" else float(value) for key, value in row.items()}
            for row in csv.DictReader(file)
        ]


@case(mlp)
def k3_csv_logger(model, keras2, tmp_path):
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    path = str(tmp_path / f"log-{keras2}.csv")
    model.fit(
        rows(),
        rows(seed=3)[:, :2],
        batch_size=4,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=(rows(4), rows(4)[:, :2]),
        callbacks=[keras.callbacks.CSVLogger(path)],
    )
    model.fit(
        rows(),
        rows(seed=3)[:, :2],
        batch_size=4,
        epochs=1,
        shuffle=False,
        verbose=0,
        callbacks=[keras.callbacks.CSVLogger(path, append=True)],
    )
    return _csv_rows(path)


@case(classifier)
def k3_model_checkpoint(model, keras2, tmp_path):
    model.compile(keras.optimizers.SGD(0.5), "categorical_crossentropy", metrics=["acc"])
    folder = tmp_path / str(keras2)
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(folder / "{epoch:02d}.weights.h5"),
        monitor="val_loss",
        save_best_only=True,
        save_weights_only=True,
    )
    model.fit(
        rows(),
        labels(),
        batch_size=4,
        epochs=3,
        shuffle=False,
        verbose=0,
        validation_data=(rows(6, seed=4), labels(6, seed=5)),
        callbacks=[checkpoint],
    )
    saved = sorted(os.listdir(folder))
    restored = classifier()
    restored.load_weights(str(folder / saved[-1]))
    return [saved, restored.get_weights()]


def _exploding():
    return keras.Sequential(
        [keras.Input((4,))]
        + [
            keras.layers.Dense(
                5, activation="relu", kernel_initializer=keras.initializers.Constant(1e5)
            )
            for _ in range(5)
        ]
        + [keras.layers.Dense(3)]
    )


@case(_exploding)
def k3_terminate_on_nan(model, keras2):
    model.compile("rmsprop", "mse")
    result = history(
        model.fit(
            rows(),
            labels(),
            batch_size=4,
            epochs=5,
            verbose=0,
            callbacks=[keras.callbacks.TerminateOnNaN()],
        )
    )
    assert len(result["loss"]) == 1 and not np.isfinite(result["loss"][0])
    return {"epochs": len(result["loss"])}


# --- Keras 2.2.4: tests/keras/engine/test_training.py -----------------------------


@case(keras2_two_io)
def k2_model_methods(model, keras2):
    # Keras 2: compile(optimizer, 'mse', metrics=[], loss_weights=[1., .5],
    # sample_weight_mode=None); migrate removes sample_weight_mode=None.
    loss = "mse" if keras2 else ["mse", "mse"]
    x, y = two_io_data()
    by_name_x = {"input_a": x[0], "input_b": x[1]}
    by_name_y = {"dense_1": y[0], "dropout": y[1]}
    with pytest.raises(RuntimeError if keras2 else ValueError):  # Keras 2: RuntimeError
        model.train_on_batch(x, y)
    model.compile("rmsprop", loss, metrics=[], loss_weights=[1.0, 0.5])
    # The `dropout` output draws its own noise per replica, as Keras 2's
    # towers did: only `dense_1`'s values (and every weight) are compared.
    record = []
    for inputs, targets in ((x, y), (by_name_x, y), (by_name_x, by_name_y)):
        record.append(on_batch(model, "train_on_batch", inputs, targets)[1])
        record.append(
            model.fit(inputs, targets, epochs=1, batch_size=4, shuffle=False, verbose=0).history[
                "dense_1_loss"
            ]
        )
        record.append(on_batch(model, "test_on_batch", inputs, targets))
    record.append(
        model.fit(
            x, y, epochs=1, batch_size=4, validation_split=0.5, shuffle=False, verbose=0
        ).history["val_loss"]
    )
    record.append(
        model.fit(
            x, y, epochs=1, batch_size=4, validation_data=(x, y), shuffle=False, verbose=0
        ).history["val_loss"]
    )
    record.append(model.predict_on_batch(x)[0])
    record.append(model.predict_on_batch(by_name_x)[0])
    record.append(model.evaluate(x, y, batch_size=4, verbose=0))
    record.append(model.predict(x, batch_size=4, verbose=0))
    return record


@case(keras2_two_io)
def k2_model_methods_sample_weight_with_none(model, keras2):
    model.compile("rmsprop", "mse" if keras2 else ["mse", "mse"], loss_weights=[1.0, 0.5])
    x, y = two_io_data()
    weights = [None, np.random.RandomState(7).rand(10).astype("float32")]
    if not keras2:
        weights[0] = np.ones(10, "float32")  # what Keras 2 and one device read a None as
    return [
        on_batch(model, "train_on_batch", x, y, sample_weight=weights)[1],
        on_batch(model, "test_on_batch", x, y, sample_weight=weights),
    ]


@case(keras2_two_io)
def k2_model_methods_metric_counts(model, keras2):
    x, y = two_io_data()
    loss = "mse" if keras2 else ["mse", "mse"]
    model.compile("rmsprop", loss, metrics=["acc"] if keras2 else [["acc"], ["acc"]])
    first = on_batch(model, "test_on_batch", x, y)
    assert len(first) == 5
    model.compile("rmsprop", loss, metrics={"dense_1": "acc"})
    second = on_batch(model, "test_on_batch", x, y)
    assert len(second) == 4
    model.compile("rmsprop", loss, metrics={"dense_1": ["acc"]})
    assert len(on_batch(model, "test_on_batch", x, y)) == 4

    def mse(y_true, y_pred):
        return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)

    model.compile("rmsprop", loss, metrics=[mse] if keras2 else [[mse], [mse]])
    third = on_batch(model, "test_on_batch", x, y)
    assert len(third) == 1 + 2 * (1 + 1)
    return [first, second, third, model.evaluate(x, y, batch_size=4, verbose=0)]


@case(keras2_two_io)
def k2_model_methods_initial_epoch(model, keras2):
    model.compile("rmsprop", "mse" if keras2 else ["mse", "mse"])
    x, y = two_io_data()
    recorder = Recorder()
    model.fit(x, y, epochs=5, batch_size=4, initial_epoch=2, callbacks=[recorder], verbose=0)
    assert recorder.epochs == [2, 3, 4]

    def batches():
        while True:
            yield (x[0][:4], x[1][:4]), (y[0][:4], y[1][:4])

    generated = Recorder()
    model.fit(
        batches(), steps_per_epoch=3, epochs=5, initial_epoch=2, callbacks=[generated], verbose=0
    )
    assert generated.epochs == [2, 3, 4]
    return [recorder.epochs, generated.batches, model.evaluate(batches(), steps=3, verbose=0)[2]]


class RandomSequence(keras.utils.PyDataset):
    """Keras 2.2.4's test `RandomSequence`, with fixed data and a read log."""

    def __init__(self, batch_size, sequence_length=12):
        super().__init__()
        self.batch_size, self.sequence_length, self.logs = batch_size, sequence_length, []
        self.x, self.y = two_io_data(batch_size * sequence_length, seed=9)

    def __len__(self):
        return self.sequence_length

    def __getitem__(self, index):
        self.logs.append(index)
        rows_ = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return (self.x[0][rows_], self.x[1][rows_]), (self.y[0][rows_], self.y[1][rows_])


@case(keras2_two_io, slow=True)
def k2_model_methods_sequences(model, keras2):
    model.compile("rmsprop", "mse" if keras2 else ["mse", "mse"], loss_weights=[1.0, 0.5])
    recorder = Recorder()
    validation = RandomSequence(4)
    # Keras 2: fit_generator(RandomSequence(3), steps_per_epoch=3, ...);
    # migrate: fit(parallel_keras.repeat_sequence(sequence, 3), ...).
    model.fit(
        parallel_keras.repeat_sequence(RandomSequence(3), 3),
        epochs=5,
        validation_data=validation,
        validation_steps=3,
        callbacks=[recorder],
        verbose=0,
    )
    assert recorder.epochs == [0, 1, 2, 3, 4]
    assert recorder.batches == list(range(3)) * 5
    # Keras 2 read the validation Sequence at most 4 * 5 times. Keras 3 on
    # one device reads 22 (its epoch iterator's look-ahead, timing-dependent);
    # the parallel model reads what its steps consume (docs/data-parallelism.md),
    # within Keras 2's bound, so the counts are compared with Keras 2's, not
    # with one device's.
    if keras2:
        assert len(validation.logs) <= 4 * 5, validation.logs
    reads = []
    full = Recorder()
    validation = RandomSequence(4)
    model.fit(RandomSequence(3), epochs=2, validation_data=validation, callbacks=[full], verbose=0)
    assert full.batches == list(range(12)) * 2
    reads.append(len(validation.logs))  # Keras 2: 12 * 2
    return [reads, model.evaluate(RandomSequence(4), verbose=0)]


def _refuses(call, error=ValueError) -> bool:
    try:
        call()
    except error:
        return True
    return False


@case(keras2_two_io)
def k2_model_methods_row_counts_refused(model, keras2):
    x, y = two_io_data()
    model.compile("rmsprop", "mse" if keras2 else ["mse", "mse"])
    if not keras2:
        return None  # Keras 3 on one device refuses some only, and trains on the others
    ones = np.ones(10, "float32")
    refused = [
        _refuses(lambda: model.train_on_batch([x[0], x[1][:2]], y, sample_weight=[None, ones])),
        _refuses(lambda: model.train_on_batch(x, [y[0], y[1][:2]], sample_weight=[None, ones])),
        _refuses(lambda: model.train_on_batch(x, y, sample_weight=[ones, ones[:2]])),
    ]
    assert refused == [True] * 3  # as Keras 2 did; the weights stay as they were
    return None


@case(keras2_two_io)
def k2_model_methods_compile_refusals(model, keras2):
    refused = [
        _refuses(lambda: model.compile("rmsprop", loss=["mse", "mae", "mape"])),
        _refuses(lambda: model.compile("rmsprop", loss="mse", loss_weights={"lstm": 0.5})),
    ]
    if keras2:  # Keras 3 accepts a list of one loss weight for two outputs.
        refused.append(_refuses(lambda: model.compile("rmsprop", loss="mse", loss_weights=[0.5])))
        refused.append(_refuses(lambda: model.compile("rmsprop", loss=[])))
        assert refused == [True] * 4
    model.compile("rmsprop", loss=["mse", "mae"])
    model.compile("rmsprop", loss="mse" if keras2 else ["mse"] * 2, loss_weights=[0.2, 0.8])
    x, y = two_io_data()
    return on_batch(model, "test_on_batch", x, y)


@case(lambda: keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, trainable=False)]))
def k2_trainable_argument(model, keras2):
    x, y = rows(5, 3), rows(5, 1)
    model.compile("rmsprop", "mse")
    before = model.predict(x, verbose=0)
    on_batch(model, "train_on_batch", x, y)
    np.testing.assert_allclose(model.predict(x, verbose=0), before)
    return before


@case(lambda: keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")]))
def k2_with_list_as_targets(model, keras2):
    model.compile("rmsprop", "binary_crossentropy")
    x = rows(2, 3)
    return on_batch(model, "train_on_batch", x, [0, 1] if keras2 else np.array([0, 1]))


@case(two_dense_outputs)
def k2_model_with_partial_loss(model, keras2):
    # Keras 2: loss for `out_a` only; metrics=['mae'] to every output, but
    # Keras 2 fed no targets to an output without a loss, so only out_a's.
    if keras2:
        model.compile("adam", {"out_a": "mse"}, metrics=["mae"])
    else:
        model.compile("adam", ["mse", None], metrics=[["mae"], []])
    x, y = two_io_data()
    targets = {"out_a": y[0]} if keras2 else [y[0], y[1]]
    return [
        on_batch(model, "train_on_batch", x, targets),
        on_batch(model, "test_on_batch", x, targets),
        history(
            model.fit(
                x,
                targets,
                batch_size=4,
                epochs=2,
                shuffle=False,
                validation_data=(x, targets),
                verbose=0,
            )
        ),
        model.evaluate(x, targets, batch_size=4, verbose=0),
        model.predict(x, verbose=0),
    ]


@case(lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), _ActivityLoss()]))
def k2_model_with_external_loss(model, keras2):
    model.compile("rmsprop", loss=None)
    x = rows()
    return [
        on_batch(model, "train_on_batch", x, None),
        history(model.fit(x, None, batch_size=4, epochs=1, shuffle=False, verbose=0)),
        model.evaluate(x, None, batch_size=4, verbose=0),
        model.predict(x, batch_size=4, verbose=0),
    ]


@case(mlp)
def k2_pandas_dataframe(model, keras2):
    import pandas as pd

    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = pd.DataFrame(rows()), pd.DataFrame(rows(seed=3)[:, :2])
    return [
        history(model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)),
        model.evaluate(x, y, batch_size=4, verbose=0),
        model.predict(x, batch_size=4, verbose=0),
        on_batch(model, "train_on_batch", x, y),
    ]


# --- Keras 2.2.4: tests/keras/test_callbacks.py, 2.3.1 callback counts -------------


def _keras2_callback_model():
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(5, activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )


@case(_keras2_callback_model)
def k2_callback_hooks_in_fit_evaluate_predict(model, keras2):
    model.compile("adam", "binary_crossentropy")
    x, y = rows(), labels()
    counters = [Counter(), Counter(), Counter()]
    model.fit(
        x,
        y,
        validation_data=(rows(4), labels(4)),
        batch_size=2,
        epochs=5,
        callbacks=[counters[0]],
        verbose=0,
    )
    model.evaluate(x, y, batch_size=2, callbacks=[counters[1]], verbose=0)
    model.predict(x, batch_size=2, callbacks=[counters[2]], verbose=0)
    fit, evaluate, predict = (dict(counter.counts) for counter in counters)
    assert fit["on_train_batch_begin"] == fit["on_batch_begin"] == 25
    assert fit["on_test_batch_end"] == 10 and fit["on_test_begin"] == 5
    assert fit["on_epoch_end"] == 5 and fit["on_train_begin"] == 1
    assert evaluate == {
        "on_test_begin": 1,
        "on_test_end": 1,
        "on_test_batch_begin": 5,
        "on_test_batch_end": 5,
    }
    assert predict == {
        "on_predict_begin": 1,
        "on_predict_end": 1,
        "on_predict_batch_begin": 5,
        "on_predict_batch_end": 5,
    }
    return [fit, evaluate, predict]


@case(_keras2_callback_model)
def k2_callback_hooks_in_generators(model, keras2):
    model.compile("adam", "binary_crossentropy")
    x, y = rows(), labels()

    def batches(with_targets=True):
        while True:
            for start in range(0, 10, 2):
                yield (
                    (x[start : start + 2], y[start : start + 2])
                    if with_targets
                    else x[start : start + 2]
                )

    counters = [Counter(), Counter(), Counter()]
    model.fit(
        batches(),
        steps_per_epoch=5,
        epochs=5,
        validation_data=batches(),
        validation_steps=2,
        callbacks=[counters[0]],
        verbose=0,
    )
    model.evaluate(batches(), steps=5, callbacks=[counters[1]], verbose=0)
    # Keras 2's predict_generator took the inputs alone (Keras 3 wants (x,)).
    model.predict(
        batches(False) if keras2 else ((b,) for b in batches(False)),
        steps=5,
        callbacks=[counters[2]],
        verbose=0,
    )
    fit, evaluate, predict = (dict(counter.counts) for counter in counters)
    assert fit["on_train_batch_end"] == 25 and fit["on_test_batch_end"] == 10
    assert evaluate["on_test_batch_end"] == 5 and predict["on_predict_batch_end"] == 5
    return [fit, evaluate, predict]


@case(_exploding)
def k2_terminate_on_nan(model, keras2):
    model.compile("rmsprop", "mse")
    result = history(
        model.fit(
            rows(),
            labels(),
            batch_size=4,
            validation_data=(rows(4), labels(4)),
            callbacks=[keras.callbacks.TerminateOnNaN()],
            epochs=20,
            verbose=0,
        )
    )
    assert len(result["loss"]) == 1
    return len(result["loss"])


@case(_keras2_callback_model, slow=True)
def k2_stop_training_csv(model, keras2, tmp_path):
    path = str(tmp_path / f"stop-{keras2}.csv")
    model.compile("rmsprop", "mse")
    x, y = rows(), labels()

    def batches():
        served = 0
        while True:
            for start in range(0, 10, 2):
                served += 1
                if served > 3 * 5:
                    yield np.full((2, 4), np.nan, "float32"), np.full((2, 3), np.nan, "float32")
                else:
                    yield x[start : start + 2], y[start : start + 2]

    result = history(
        model.fit(
            batches(),
            steps_per_epoch=5,
            validation_data=(rows(4), labels(4)),
            callbacks=[keras.callbacks.TerminateOnNaN(), keras.callbacks.CSVLogger(path)],
            epochs=20,
            verbose=0,
        )
    )
    assert len(result["loss"]) > 1 and np.isnan(result["loss"][-1])
    with open(path) as file:
        last = list(csv.reader(file))[-1]
    assert "nan" in last
    return len(result["loss"])


@case(_keras2_callback_model, slow=True)
def k2_model_checkpoint(model, keras2, tmp_path):
    model.compile("rmsprop", "categorical_crossentropy", metrics=["acc"])
    x, y, data = rows(), labels(), (rows(6, seed=4), labels(6, seed=5))
    folder = tmp_path / str(keras2)
    written = []
    for monitor, save_best_only, mode in (
        ("val_loss", False, "auto"), ("val_loss", False, "min"), ("val_acc", False, "max"), ("val_acc", True, "max"),
    ):  # fmt: skip
        path = str(folder / "checkpoint.h5")
        checkpoint = keras.callbacks.ModelCheckpoint(
            path, monitor=monitor, save_best_only=save_best_only, mode=mode
        )
        model.fit(
            x,
            y,
            batch_size=4,
            validation_data=data,
            callbacks=[checkpoint],
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        written.append(os.path.isfile(path))
        os.remove(path)
    # Keras 2's period=2; migrate: parallel_keras.callbacks.ModelCheckpoint.
    pattern = str(folder / "checkpoint.{epoch:02d}.h5")
    checkpoint = Keras2ModelCheckpoint(pattern, monitor="val_acc", mode="auto", period=2)
    model.fit(
        x,
        y,
        batch_size=4,
        validation_data=data,
        callbacks=[checkpoint],
        epochs=4,
        verbose=0,
        shuffle=False,
    )
    assert written == [True] * 4
    assert sorted(os.listdir(folder)) == ["checkpoint.02.h5", "checkpoint.04.h5"]
    return sorted(os.listdir(folder))


@case(_keras2_callback_model)
def k2_early_stopping(model, keras2):
    model.compile("rmsprop", "categorical_crossentropy", metrics=["acc"])
    x, y, data = rows(), labels(), (rows(6, seed=4), labels(6, seed=5))
    results = []
    # Keras 2 loops over (val_loss, auto), (val_acc, auto), (val_acc, max).
    # migrate writes mode='max' for Keras 2's mode='auto' on an accuracy, so
    # its last two are the same callback here: it runs once.
    for monitor, mode in (("val_loss", "auto"), ("val_acc", "max")):
        stopping = keras.callbacks.EarlyStopping(monitor=monitor, patience=0, mode=mode)
        results.append(
            history(
                model.fit(
                    x,
                    y,
                    batch_size=4,
                    validation_data=data,
                    callbacks=[stopping],
                    epochs=5,
                    verbose=0,
                    shuffle=False,
                )
            )
        )
    return results


@case(lambda: keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)]))
def k2_early_stopping_reuse(model, keras2):
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x, y = np.ones((4, 1), "float32"), np.zeros((4, 1), "float32")
    # The loss never improves: Keras 2 stopped after `patience` epochs.
    stopping = Keras2EarlyStopping(monitor="loss", patience=3)
    first = model.fit(x, y, epochs=10, callbacks=[stopping], verbose=0).history["loss"]
    second = model.fit(x, y, epochs=10, callbacks=[stopping], verbose=0).history["loss"]
    assert len(first) == len(second) == 4
    return [first, second]


@case(mlp)
def k2_early_stopping_baseline(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    stopping = Keras2EarlyStopping(monitor="loss", baseline=1e-9, patience=2)
    result = history(
        model.fit(
            rows(),
            rows(seed=3)[:, :2],
            batch_size=4,
            epochs=6,
            shuffle=False,
            verbose=0,
            callbacks=[stopping],
        )
    )
    assert len(result["loss"]) == 2
    return result


@case(mlp)
def k2_learning_rate_scheduler(model, keras2):
    model.compile(keras.optimizers.SGD(0.1), "mse")
    scheduler = keras.callbacks.LearningRateScheduler(lambda epoch: 1.0 / (1.0 + epoch))
    model.fit(
        rows(),
        rows(seed=3)[:, :2],
        batch_size=4,
        epochs=5,
        shuffle=False,
        verbose=0,
        callbacks=[scheduler],
    )
    assert (
        abs(float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) - 0.2)
        < keras.config.epsilon()
    )
    return model.get_weights()


@case(_keras2_callback_model)
def k2_reduce_lr_on_plateau(model, keras2):
    x, y, data = rows(), labels(), (rows(6, seed=4), labels(6, seed=5))
    results = []
    for min_delta, expected in ((10, 0.01), (0, None)):
        keras.utils.set_random_seed(3)
        model.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy")
        # Keras 2's epsilon=; migrate renames it min_delta=.
        reduce = keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", factor=0.1, min_delta=min_delta, patience=1, cooldown=5
        )
        results.append(
            history(
                model.fit(
                    x,
                    y,
                    batch_size=4,
                    validation_data=data,
                    callbacks=[reduce],
                    epochs=2,
                    verbose=0,
                    shuffle=False,
                )
            )
        )
        rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
        if expected is not None:  # upstream's other value depends on its data
            np.testing.assert_allclose(rate, expected, atol=keras.config.epsilon())
        results.append(rate)
    return results


@case(_keras2_callback_model)
def k2_csv_logger(model, keras2, tmp_path):
    path = str(tmp_path / f"log-{keras2}.tsv")
    model.compile("rmsprop", "categorical_crossentropy", metrics=["acc"])
    x, y, data = rows(), labels(), (rows(6, seed=4), labels(6, seed=5))
    model.fit(
        x,
        y,
        batch_size=4,
        validation_data=data,
        callbacks=[keras.callbacks.CSVLogger(path, separator="\t")],
        epochs=1,
        verbose=0,
        shuffle=False,
    )
    model.fit(
        x,
        y,
        batch_size=4,
        validation_data=data,
        callbacks=[keras.callbacks.CSVLogger(path, append=True)],
        epochs=1,
        verbose=0,
        shuffle=False,
    )
    with open(path) as file:
        lines = file.read().splitlines()
    assert len(lines) == 3 and "\t" in lines[0]
    # The logged values as numbers: summed on 4 replicas a float32 loss may
    # differ from one device's in its last bits, which the text shows.
    return [
        [float(value) for value in line.replace("\t", ",").split(",")[1:]] if i else line
        for i, line in enumerate(lines)
    ]


@case(_keras2_callback_model)
def k2_lambda_callback(model, keras2):
    model.compile("rmsprop", "categorical_crossentropy", metrics=["acc"])
    ends = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: ends.append((epoch, logs["acc"], logs["val_loss"]))
    )
    model.fit(
        rows(),
        labels(),
        batch_size=4,
        validation_data=(rows(6), labels(6)),
        callbacks=[callback],
        epochs=3,
        verbose=0,
        shuffle=False,
    )
    return ends


# --- The run ---------------------------------------------------------------------


def _compare(got, expected, where="result"):
    if isinstance(expected, dict):
        assert sorted(map(str, got)) == sorted(map(str, expected)), where
        for key in expected:
            _compare(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)) and not _numeric(expected):
        assert len(got) == len(expected), where
        for index, (a, b) in enumerate(zip(got, expected)):
            _compare(a, b, f"{where}[{index}]")
    elif _numeric(expected):
        np.testing.assert_allclose(
            np.asarray(got, "float64"), np.asarray(expected, "float64"), atol=ATOL, err_msg=where
        )
    else:
        assert got == expected, where


def _numeric(value) -> bool:
    try:
        array = np.asarray(value)
    except ValueError:
        return False
    return array.dtype.kind in "fiub" and array.dtype != object


def _params():
    params = []
    for name, (_, _, slow) in CASES.items():
        for gpus in _replica_counts(name):
            marks = [pytest.mark.slow] if slow else []
            reason = EXPECTED_FAILURES.get((name, gpus)) or EXPECTED_FAILURES.get((name, None))
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            intermittent = INTERMITTENT_FAILURES.get((name, gpus)) or INTERMITTENT_FAILURES.get(
                (name, None)
            )
            if intermittent:
                marks.append(pytest.mark.xfail(strict=False, reason=intermittent))
            params.append(pytest.param(name, gpus, marks=marks, id=f"{name}-{gpus}"))
    return params


@pytest.mark.parametrize("name, gpus", _params())
def test_upstream_case_matches_one_device(name, gpus, tmp_path):
    build, drive, _ = CASES[name]
    extra = {"tmp_path": tmp_path} if "tmp_path" in drive.__code__.co_varnames else {}
    keras.utils.set_random_seed(0)
    reference = build()
    template = build()
    template.set_weights(reference.get_weights())
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)

    keras.utils.set_random_seed(1)
    try:
        expected = drive(reference, keras2=False, **extra)
    except Exception as error:
        error.add_note("(raised on one device, the reference)")
        raise
    keras.utils.set_random_seed(1)
    got = drive(parallel, keras2=True, **extra)

    _compare(got, expected)
    for index, (a, b) in enumerate(zip(template.get_weights(), reference.get_weights())):
        np.testing.assert_allclose(a, b, atol=ATOL, err_msg=f"weight {index}")


def test_the_suite_covers_every_listed_case():
    """docs/data-parallelism.md states the count; this keeps it honest."""
    docs = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "data-parallelism.md")
    with open(docs) as file:
        text = file.read()
    assert f"{len(CASES)} cases" in text
    assert f"{len(_params())} tests" in text
    assert TWO_REPLICA_CASES <= set(CASES)
