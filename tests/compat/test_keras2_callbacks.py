# SPDX-License-Identifier: Apache-2.0
"""Keras 2-era callbacks that read `self.params` run as migrated, with Keras 2's values."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import compat
from tests.compat.helpers import migrated, run

RECORDER = """\
import numpy as np
from keras.callbacks import Callback
from keras.layers import Dense, Input
from keras.models import Model
from keras.utils import multi_gpu_model


class Recorder(Callback):
    def on_train_begin(self, logs=None):
        self.begin = {key: self.params[key]
                      for key in ('batch_size', 'samples', 'steps', 'do_validation', 'epochs')}
        self.sizes = []

    def on_batch_end(self, batch, logs=None):
        self.sizes.append((logs['batch'], logs['size']))

    def on_epoch_end(self, epoch, logs=None):
        self.names = list(self.params['metrics'])
        self.values = [float(logs[name]) for name in self.params['metrics']]


class StepRecorder(Callback):
    def on_train_begin(self, logs=None):
        self.keys = sorted(self.params)
        self.begin = (self.params['steps'], self.params['do_validation'])

    def on_epoch_end(self, epoch, logs=None):
        self.names = list(self.params['metrics'])


rng = np.random.RandomState(0)
x, y = rng.rand(10, 3).astype('float32'), rng.rand(10, 1).astype('float32')
inputs = Input((3,))
model = Model(inputs, Dense(1)(inputs))
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='mse', metrics=['mae'])
recorder = Recorder()
parallel.fit(x, y, batch_size=4, epochs=1, verbose=0, validation_data=(x[:4], y[:4]),
             callbacks=[recorder])
validation = parallel.evaluate(x[:4], y[:4], verbose=0)


def batches():
    while True:
        yield x[:4], y[:4]


steps = StepRecorder()
parallel.fit_generator(batches(), steps_per_epoch=2, epochs=1, verbose=0, callbacks=[steps])
"""


def test_a_callback_reading_keras2_params_gets_keras2_values_on_4_devices_and_one():
    result = migrated(RECORDER)
    assert "class Recorder(parallel_keras.compat.Keras2Callback):" in result.migrated
    parallel, single = run(result, gpus=4), run(result, gpus=1)
    for namespace in (parallel, single):
        recorder = namespace["recorder"]
        # Keras 2's fit_loop: arrays give batch_size and samples, steps None.
        assert recorder.begin == {
            "batch_size": 4,
            "samples": 10,
            "steps": None,
            "do_validation": True,
            "epochs": 1,
        }
        assert recorder.sizes == [(0, 4), (1, 4), (2, 2)]
        assert recorder.names == ["loss", "mae", "val_loss", "val_mae"]
        # fit_generator's params: no batch_size or samples.
        assert namespace["steps"].keys == ["do_validation", "epochs", "metrics", "steps", "verbose"]
        assert namespace["steps"].begin == (2, False)
        assert namespace["steps"].names == ["loss", "mae"]
    np.testing.assert_allclose(parallel["recorder"].values, single["recorder"].values, rtol=1e-5)
    # The values the callback read under val_loss, val_mae are the validation's.
    np.testing.assert_allclose(single["recorder"].values[2:], single["validation"], rtol=1e-5)


TQDM = """\
import io

import numpy as np
from keras.layers import Dense, Input
from keras.models import Model
from keras_tqdm import TQDMCallback

rng = np.random.RandomState(0)
x, y = rng.rand(8, 3).astype('float32'), rng.rand(8, 1).astype('float32')
inputs = Input((3,))
model = Model(inputs, Dense(1)(inputs))
model.compile(optimizer='sgd', loss='mse', metrics=['mae'])
out = io.StringIO()
model.fit(x, y, batch_size=2, epochs=2, verbose=0, validation_data=(x, y),
          callbacks=[TQDMCallback(output_file=out)])
"""


def test_keras_tqdm_progress_bars_show_the_metrics():
    pytest.importorskip("keras_tqdm")
    result = migrated(TQDM)
    compact = "".join(result.migrated.split())
    assert (
        "callbacks=[parallel_keras.compat.keras2_callback(TQDMCallback(output_file=out))]"
        in compact
    )
    namespace = run(result, gpus=1)
    shown = namespace["out"].getvalue()
    last = namespace["model"].evaluate(namespace["x"], namespace["y"], verbose=0)
    # keras_tqdm writes "Epoch: 1 - loss: ..., mae: ..., val_loss: ..., val_mae: ..." at an epoch's end.
    assert f"val_loss: {last[0]:0.3f}" in shown and "val_mae: " in shown and "Epoch: 1" in shown


def test_keras2_callback_refuses_what_is_not_a_keras_callback():
    with pytest.raises(TypeError, match="Received: builtins.object"):
        compat.keras2_callback(object())


WRITE_LOG = """\
import numpy as np
import tensorflow as tf
from keras.callbacks import TensorBoard
from keras.layers import Dense, Input
from keras.models import Model


def write_log(callback, names, logs, batch_no):
    for name, value in zip(names, logs):
        summary = tf.Summary()
        summary_value = summary.value.add()
        summary_value.simple_value = value
        summary_value.tag = name
        callback.writer.add_summary(summary, batch_no)
        callback.writer.flush()


inputs = Input((3,))
model = Model(inputs, Dense(1)(inputs))
model.compile(optimizer='sgd', loss='mse', metrics=['mae'])
callback = TensorBoard(LOG_DIR)
callback.set_model(model)
x, y = np.ones((4, 3), 'float32'), np.zeros((4, 1), 'float32')
logged = []
for step in range(2):
    logs = model.train_on_batch(x, y)
    logged.append(logs)
    write_log(callback, ['loss', 'mae'], logs, step)
"""


def test_tensorboard_writer_of_keras2_gan_scripts_writes_the_logged_values(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator

    result = migrated(WRITE_LOG)
    assert "callback = parallel_keras.compat.TensorBoard(LOG_DIR)" in result.migrated
    namespace = run(result, gpus=1, LOG_DIR=str(tmp_path))
    events = event_accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    written = [(e.step, e.value) for e in events.Scalars("loss")]
    expected = [(step, logs[0]) for step, logs in enumerate(namespace["logged"])]
    np.testing.assert_allclose(written, expected, rtol=1e-6)
