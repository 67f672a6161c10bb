# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `ModelMGPU(Model)` wrapper (keras-team/keras#2436) trains as the
parallel model and saves the template, compared with one device."""

import json
import zipfile

import h5py
import keras
import keras.models
import numpy as np
import pytest
from helpers import one_device_on_batch

import parallel_keras
import parallel_keras.callbacks
from parallel_keras.data_parallel import parallel_model

ATOL = 1e-5


class ClassicMGPU(keras.models.Model):
    """The wrapper as posted: `super(Cls, self).__getattribute__`."""

    def __init__(self, ser_model, gpus):
        pmodel = parallel_keras.multi_gpu_model(ser_model, gpus)
        self.__dict__.update(pmodel.__dict__)
        self._smodel = ser_model

    def __getattribute__(self, attrname):
        if "load" in attrname or "save" in attrname:
            return getattr(self._smodel, attrname)
        return super(ClassicMGPU, self).__getattribute__(attrname)  # noqa: UP008


class Py3MGPU(keras.Model):
    """Zero-argument `super()`, the parallel model never named, and
    `super().__init__()` called after adopting (seen in repos)."""

    def __init__(self, ser_model, gpus):
        self.__dict__.update(parallel_keras.multi_gpu_model(ser_model, gpus).__dict__)
        self.serial_model = ser_model
        super().__init__()

    def __getattribute__(self, attrname):
        if attrname.startswith(("save", "load")):
            return getattr(self.serial_model, attrname)
        return super().__getattribute__(attrname)


def template(seed=5):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="tanh"), keras.layers.Dense(3)],
        name="serial",
    )


def data(rows=32):
    rng = np.random.RandomState(1)
    return rng.rand(rows, 4).astype("float32"), rng.rand(rows, 3).astype("float32")


def compile_sgd(model):
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])


def max_weight_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights()))


@pytest.mark.parametrize("wrapper_class", [ClassicMGPU, Py3MGPU])
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_wrapper_trains_as_one_device_and_saves_the_template(wrapper_class, tmp_path):
    x, y = data()
    single = template()
    compile_sgd(single)
    single_history = single.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

    serial = template()
    wrapper = wrapper_class(serial, 4)
    assert isinstance(wrapper, wrapper_class)
    assert type(wrapper).__name__ == wrapper_class.__name__
    compile_sgd(wrapper)
    # Keras's own ModelCheckpoint takes a legacy .h5 path on Keras 3.8+;
    # Keras 3.5 refuses it ("must end in `.keras`"), so the .keras format there.
    checkpoint = tmp_path / "checkpoint.h5"
    try:
        keras.callbacks.ModelCheckpoint(str(checkpoint))
    except ValueError:
        checkpoint = tmp_path / "checkpoint.keras"
    legacy_checkpoint = tmp_path / "legacy_checkpoint.h5"
    history = wrapper.fit(
        x,
        y,
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[
            keras.callbacks.ModelCheckpoint(str(checkpoint)),
            parallel_keras.callbacks.ModelCheckpoint(
                str(legacy_checkpoint), monitor="loss", save_best_only=True, period=1
            ),
        ],
    )

    assert max_weight_difference(serial, single) < ATOL
    np.testing.assert_allclose(history.history["loss"], single_history.history["loss"], rtol=1e-5)
    assert wrapper.metrics_names == ["loss", "mae"]  # Keras 2's names, as the parallel model's
    np.testing.assert_allclose(
        wrapper.evaluate(x, y, batch_size=8, verbose=0),
        single.evaluate(x, y, batch_size=8, verbose=0),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        wrapper.predict(x, batch_size=8, verbose=0),
        single.predict(x, batch_size=8, verbose=0),
        atol=ATOL,
    )
    np.testing.assert_allclose(
        wrapper.predict_on_batch(x[:8]), single.predict_on_batch(x[:8]), atol=ATOL
    )
    np.testing.assert_allclose(
        wrapper.test_on_batch(x[:8], y[:8]),
        one_device_on_batch(single, "test_on_batch", x[:8], y[:8]),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        wrapper.train_on_batch(x[:8], y[:8]),
        one_device_on_batch(single, "train_on_batch", x[:8], y[:8]),
        rtol=1e-5,
    )
    assert max_weight_difference(serial, single) < ATOL
    assert wrapper.optimizer.iterations.numpy() == single.optimizer.iterations.numpy()

    # ModelCheckpoint on the wrapper and wrapper.save write the template.
    final = tmp_path / "final.h5"
    wrapper.save(str(final))
    for path in (checkpoint, legacy_checkpoint, final):
        if path.suffix == ".keras":
            with zipfile.ZipFile(path) as archive:
                config = json.loads(archive.read("config.json"))
        else:
            with h5py.File(path, "r") as handle:
                config = json.loads(handle.attrs["model_config"])
        assert config["class_name"] == "Sequential"
        assert config["config"]["name"] == "serial"
    assert max_weight_difference(keras.saving.load_model(final, compile=False), single) < ATOL

    # load_weights goes to the template too.
    weights = tmp_path / "start.weights.h5"
    template().save_weights(str(weights))
    wrapper.load_weights(str(weights))
    assert max_weight_difference(serial, template()) == 0


def test_wrapper_summary_is_the_templates(capsys):
    serial = template()
    wrapper = ClassicMGPU(serial, 2)
    wrapper.summary()
    assert '"serial"' in capsys.readouterr().out


class HolderInitFirst(keras.Model):
    def __init__(self, serial):
        super().__init__()
        self.parallel = parallel_keras.multi_gpu_model(serial, 2)


class HolderInitAfter(keras.Model):
    def __init__(self, serial):
        parallel = parallel_keras.multi_gpu_model(serial, 2)
        super().__init__(name="holder")
        self.parallel = parallel


@pytest.mark.parametrize("holder_class", [HolderInitFirst, HolderInitAfter])
def test_model_holding_a_parallel_model_is_left_alone(holder_class):
    holder = holder_class(template())
    assert type(holder) is holder_class
    assert not isinstance(holder, parallel_model.ParallelModel)
    assert holder.built is False and isinstance(holder.parallel, parallel_model.ParallelModel)
