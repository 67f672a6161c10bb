# SPDX-License-Identifier: Apache-2.0
"""Checkpoint callbacks on a parallel run; files load on one device."""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest
from helpers import ROWS, flat, load_in_fresh_process, targets

import parallel_keras
from parallel_keras.testing import legacy_files


def _parallel(name="functional"):
    template = legacy_files.TEMPLATES[name]()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return template, parallel


class _RecordPredictions(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.by_epoch = {}

    def on_epoch_end(self, epoch, logs=None):
        self.by_epoch[epoch + 1] = flat(self.model.template(ROWS, training=False))


@pytest.mark.subprocess
def test_checkpoints_write_files_that_load_on_one_device(tmp_path):
    template, parallel = _parallel()
    record = _RecordPredictions()
    stock = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "stock-{epoch:02d}-{val_loss:.4f}.keras"),
        monitor="val_loss",
        save_best_only=True,
    )
    stock_weights = keras.callbacks.ModelCheckpoint(
        str(tmp_path / "stock-last.weights.h5"), save_weights_only=True
    )
    # The legacy tutorials' exact positional call, with period=2.
    seeds = parallel_keras.ParallelModelCheckpoint(
        template,
        str(tmp_path / "unet-{epoch:02d}-{val_loss:.4f}.hdf5"),
        "val_loss",
        0,
        False,
        False,
        "min",
        2,
    )
    legacy = parallel_keras.callbacks.ModelCheckpoint(
        str(tmp_path / "w-{epoch:02d}.h5"), save_weights_only=True, period=3
    )
    history = parallel.fit(
        ROWS,
        targets("functional"),
        batch_size=4,
        epochs=5,
        verbose=0,
        validation_data=(ROWS[:4], targets("functional")[:4]),
        callbacks=[record, stock, stock_weights, seeds, legacy],
    )
    names = sorted(os.listdir(tmp_path))
    losses = history.history["val_loss"]
    best = [e for e in range(1, 6) if losses[e - 1] == min(losses[:e])]
    assert [n for n in names if n.startswith("stock-0")] == [
        f"stock-{e:02d}-{losses[e - 1]:.4f}.keras" for e in best
    ]
    assert [n for n in names if n.startswith("unet-")] == [
        f"unet-{e:02d}-{losses[e - 1]:.4f}.hdf5" for e in (2, 4)
    ]
    assert [n for n in names if n.startswith("w-")] == ["w-03.h5"]
    assert not [n for n in names if ".tmp-" in n]

    files = {
        n + ("|weights_h5" if n.startswith("w-") else ""): ("functional", str(tmp_path / n))
        for n in names
    }
    loaded = load_in_fresh_process(files)
    assert len(loaded) == len(names)
    for key, predictions in loaded.items():
        name = key.split("|")[0]
        epoch = 5 if name == "stock-last.weights.h5" else int(name.split("-")[1][:2])
        np.testing.assert_allclose(
            predictions[0], record.by_epoch[epoch][0], atol=1e-6, err_msg=name
        )
    # Epochs differ, so loading the wrong checkpoint would be noticed.
    assert not np.allclose(record.by_epoch[2][0], record.by_epoch[4][0], atol=1e-6)


def test_unwritable_folder_fails_before_training_starts(tmp_path):
    template, parallel = _parallel("sequential")
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # A file where the folder should be.
    started = []
    before = [np.copy(w) for w in template.get_weights()]
    checkpoint = parallel_keras.ParallelModelCheckpoint(
        template, str(blocker / "ckpt-{epoch:02d}.keras")
    )
    with pytest.raises(ValueError, match="not writable"):
        parallel.fit(
            ROWS,
            targets("sequential"),
            epochs=2,
            verbose=0,
            callbacks=[
                checkpoint,
                keras.callbacks.LambdaCallback(on_epoch_begin=lambda *_: started.append(1)),
            ],
        )
    assert not started
    for old, new in zip(before, template.get_weights()):
        np.testing.assert_array_equal(old, new)


def test_bad_arguments_are_refused():
    template, _ = _parallel("sequential")
    with pytest.raises(ValueError, match=r"must not end in \.keras.*'x\.keras'.*\.weights\.h5"):
        parallel_keras.callbacks.ModelCheckpoint("x.keras", save_weights_only=True)
    with pytest.raises(ValueError, match=r"must not end in \.weights\.h5"):
        parallel_keras.callbacks.ModelCheckpoint("x.weights.h5")
    with pytest.raises(ValueError, match="period"):
        parallel_keras.callbacks.ModelCheckpoint("x.keras", period=0)
    with pytest.raises(TypeError, match="first argument is the template"):
        parallel_keras.ParallelModelCheckpoint("x.keras", template)
    assert isinstance(
        parallel_keras.ParallelModelCheckpoint(template, "x.keras"), keras.callbacks.ModelCheckpoint
    )


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "name, save_weights_only, written",
    [
        # Keras 2 accepted any name; computed paths keep working on Keras 3.
        ("w-{epoch:02d}.ckpt", True, "w-02.ckpt.weights.h5"),
        ("w-{epoch:02d}", True, "w-02.weights.h5"),
        ("w-{epoch:02d}.hdf5", True, "w-02.hdf5"),
        ("m-{epoch:02d}.model", False, "m-02.model.keras"),
        ("m-{epoch:02d}", False, "m-02.keras"),
        ("m-{epoch:02d}.hdf5", False, "m-02.hdf5"),
    ],
)
def test_any_keras2_suffix_writes_a_file_keras3_loads(tmp_path, name, save_weights_only, written):
    template, parallel = _parallel("sequential")
    filepath = os.path.join(str(tmp_path), "run", name)  # Computed at run time.
    checkpoint = parallel_keras.ParallelModelCheckpoint(
        template, filepath, save_weights_only=save_weights_only
    )
    parallel.fit(
        ROWS, targets("sequential"), batch_size=4, epochs=2, verbose=0, callbacks=[checkpoint]
    )
    assert sorted(os.listdir(tmp_path / "run")) == sorted({written, written.replace("02", "01")})
    key = written + ("|weights_h5" if save_weights_only else "")
    loaded = load_in_fresh_process({key: ("sequential", str(tmp_path / "run" / written))})
    np.testing.assert_allclose(loaded[key][0], flat(template(ROWS, training=False))[0], atol=1e-5)


def test_checkpoints_of_a_model_built_from_the_template_layers(tmp_path):
    """Keras 2 saved any model given to a checkpoint: an inference model
    sharing the trained layers is saved each epoch, with the trained weights."""
    keras.utils.set_random_seed(5)
    inputs = keras.Input((6,))
    features = keras.layers.Dense(4, activation="tanh", name="features")(inputs)
    template = keras.Model(inputs, keras.layers.Dense(1, name="head")(features))
    inference = keras.Model(inputs, features, name="inference")
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    by_epoch = {}
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: by_epoch.setdefault(
            epoch + 1, np.asarray(inference(ROWS, training=False))
        )
    )
    callbacks = [
        record,
        parallel_keras.ParallelModelCheckpoint(
            inference,
            str(tmp_path / "seeds-{epoch:02d}.h5"),
            monitor="loss",
            save_weights_only=True,
        ),
        parallel_keras.callbacks.ModelCheckpoint(
            str(tmp_path / "infer-{epoch:02d}.keras"), monitor="loss", template=inference
        ),
    ]
    parallel.fit(
        ROWS, np.ones((12, 1), "float32"), batch_size=4, epochs=2, verbose=0, callbacks=callbacks
    )
    assert sorted(os.listdir(tmp_path)) == [
        "infer-01.keras",
        "infer-02.keras",
        "seeds-01.h5",
        "seeds-02.h5",
    ]
    for epoch in (1, 2):
        loaded = keras.models.load_model(tmp_path / f"infer-{epoch:02d}.keras")
        np.testing.assert_allclose(loaded.predict(ROWS, verbose=0), by_epoch[epoch], atol=1e-6)
        weights_only = keras.models.clone_model(inference)
        weights_only.load_weights(tmp_path / f"seeds-{epoch:02d}.h5")
        np.testing.assert_allclose(
            weights_only.predict(ROWS, verbose=0), by_epoch[epoch], atol=1e-6
        )
    assert not np.allclose(by_epoch[1], by_epoch[2], atol=1e-6)


def test_checkpoint_of_a_model_sharing_no_weights_is_refused(tmp_path):
    template, parallel = _parallel("sequential")
    stranger = legacy_files.TEMPLATES["sequential"]()
    before = [np.copy(w) for w in template.get_weights()]
    checkpoint = parallel_keras.callbacks.ModelCheckpoint(
        str(tmp_path / "x-{epoch}.keras"), monitor="loss", template=stranger
    )
    with pytest.raises(ValueError, match="holds none of the weights"):
        parallel.fit(
            ROWS, targets("sequential"), batch_size=4, epochs=1, verbose=0, callbacks=[checkpoint]
        )
    assert os.listdir(tmp_path) == []
    for old, new in zip(before, template.get_weights()):
        np.testing.assert_array_equal(old, new)


# --- EarlyStopping: Keras 2's rules ------------------------------------------


def _early_stopping_run(gpus, **arguments):
    """`(parallel history, one device history)` of 5 epochs with Keras 2's
    EarlyStopping(**arguments) on each."""
    histories = []
    for replicas in (gpus, 1):
        keras.utils.set_random_seed(11)
        template = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model = template if replicas == 1 else parallel_keras.multi_gpu_model(template, replicas)
        model.compile(keras.optimizers.SGD(0.05), "mse")
        rng = np.random.RandomState(0)
        x, y = rng.rand(8, 3).astype("float32"), rng.rand(8, 1).astype("float32")
        stop = parallel_keras.callbacks.EarlyStopping(**arguments)
        history = model.fit(
            x, y, batch_size=4, epochs=5, shuffle=False, verbose=0, callbacks=[stop]
        )
        histories.append(history.history["loss"])
    return histories


@pytest.mark.parametrize("gpus", [2, 4])
def test_early_stopping_with_an_unmet_baseline_stops_after_patience_as_keras2(gpus):
    # The loss improves every epoch, never below the baseline: Keras 2
    # stopped after `patience` epochs (Keras 3's callback trains on).
    parallel, one_device = _early_stopping_run(gpus, monitor="loss", baseline=1e-9, patience=2)
    assert len(parallel) == 2
    np.testing.assert_allclose(parallel, one_device, atol=1e-5)
    assert all(b < a for a, b in zip(parallel, parallel[1:]))  # it was improving


@pytest.mark.parametrize("gpus", [2, 4])
def test_early_stopping_with_a_met_baseline_trains_while_improving(gpus):
    parallel, one_device = _early_stopping_run(gpus, monitor="loss", baseline=100.0, patience=0)
    assert len(parallel) == 5
    np.testing.assert_allclose(parallel, one_device, atol=1e-5)


class _StopFlag:
    stop_training = False

    def __init__(self):
        self.weights = [np.zeros(1)]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = weights


def _epochs_until_stop(callback, values, monitor="val_acc"):
    """Epochs run before `callback` stops, driven as Keras 2's test drove it."""
    callback.set_model(_StopFlag())
    callback.on_train_begin()
    for epoch, value in enumerate(values):
        callback.model.weights = [np.full(1, value)]
        callback.on_epoch_end(epoch, {monitor: value})
        if callback.model.stop_training:
            return epoch + 1
    return len(values)


@pytest.mark.parametrize(
    "arguments, values, epochs",
    [
        # Keras 2.2.4's test_EarlyStopping_baseline: Keras 3 trains 4 epochs
        # on the second (each epoch improves on the one before).
        ({"baseline": 0.75, "patience": 2}, [0.55, 0.76, 0.81, 0.81], 4),
        ({"baseline": 0.75, "patience": 2}, [0.55, 0.74, 0.81, 0.81], 2),
        # patience=0 stops at the first epoch without improvement, epoch 0
        # included (Keras 3 never stops at epoch 0).
        ({"baseline": 0.75, "patience": 0}, [0.5, 0.9], 1),
        # mode='auto' maximizes a name holding "acc" (Keras 3 asks the metric).
        ({"patience": 1}, [0.5, 0.6, 0.7, 0.6], 4),
        ({"patience": 1, "min_delta": 0.2}, [0.5, 0.6, 0.7, 0.6], 2),
    ],
)
def test_early_stopping_counts_epochs_as_keras2(arguments, values, epochs):
    stop = parallel_keras.callbacks.EarlyStopping(monitor="val_acc", **arguments)
    assert _epochs_until_stop(stop, values) == epochs


@pytest.mark.parametrize("patience, epochs, kept", [(1, 3, 1.0), (2, 3, 2.0)])
def test_early_stopping_restores_best_weights_only_when_it_stops(patience, epochs, kept):
    stop = parallel_keras.callbacks.EarlyStopping(
        monitor="loss", patience=patience, restore_best_weights=True
    )
    stop.on_train_end()  # stand-in for fit's end: restores nothing (Keras 2)
    assert _epochs_until_stop(stop, [3.0, 1.0, 2.0], "loss") == epochs
    stop.on_train_end()
    # Stopped: the best epoch's weights; not stopped: the last epoch's.
    assert stop.model.weights[0][0] == kept
    assert isinstance(stop, keras.callbacks.EarlyStopping)


def test_a_keras2_subclass_reads_and_resets_epochs_since_last_save(tmp_path):
    template, parallel = _parallel()

    class TemplateCheckpoint(parallel_keras.callbacks.ModelCheckpoint):
        """experiencor/keras-yolo3's: Keras 2's on_epoch_end, saving the template."""

        def __init__(self, model_to_save, **kwargs):
            super().__init__(**kwargs)
            self.model_to_save = model_to_save
            self.saved_at = []

        def on_epoch_end(self, epoch, logs=None):
            self.epochs_since_last_save += 1
            if self.epochs_since_last_save >= self.period:
                self.epochs_since_last_save = 0
                path = self.filepath.format(epoch=epoch + 1)
                self.model_to_save.save_weights(path)
                self.saved_at.append(epoch + 1)

    checkpoint = TemplateCheckpoint(
        template,
        filepath=str(tmp_path / "t-{epoch:02d}.weights.h5"),
        save_weights_only=True,
        period=2,
    )
    parallel.fit(
        ROWS, targets("functional"), batch_size=4, epochs=5, verbose=0, callbacks=[checkpoint]
    )
    assert checkpoint.saved_at == [2, 4]
    assert sorted(os.listdir(tmp_path)) == ["t-02.weights.h5", "t-04.weights.h5"]


def test_a_keras2_subclass_compares_with_keras2s_monitor_op_and_best(tmp_path):
    template, parallel = _parallel()

    class BestOnly(parallel_keras.callbacks.ModelCheckpoint):
        """Keras 2's save_best_only branch, in a subclass's own on_epoch_end."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.improved = []

        def on_epoch_end(self, epoch, logs=None):
            current = logs.get(self.monitor)
            if self.monitor_op(current, self.best):
                self.best = current
                self.improved.append(epoch + 1)

    checkpoint = BestOnly(
        filepath=str(tmp_path / "b.weights.h5"), save_weights_only=True, monitor="loss"
    )
    history = parallel.fit(
        ROWS, targets("functional"), batch_size=4, epochs=3, verbose=0, callbacks=[checkpoint]
    )
    losses = history.history["loss"]
    expected = [e + 1 for e, loss in enumerate(losses) if loss < min([np.inf, *losses[:e]])]
    assert checkpoint.improved == expected and checkpoint.improved[0] == 1
    assert checkpoint.best == min(losses)
