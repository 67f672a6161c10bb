# SPDX-License-Identifier: Apache-2.0
"""Keras 2 snippets migrated onto the compatibility paths, run on 4 devices and on one.

Each snippet is what Keras 2-era scripts wrote; `parallel-keras migrate`
rewrites what Keras 3 lacks onto TensorFlow's `tf.compat.v1`, `tf_keras`
(through `parallel_keras.compat`) or `parallel_keras.compat`. The migrated
code is executed with a `multi_gpu_model` on the 4 simulated devices and
with the template alone, and the numbers must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import tf_keras

from tests.compat.helpers import assert_same_numbers, migrated, run

pytestmark = pytest.mark.slow


SESSIONS_AND_FUNCTION = """\
import numpy as np
import tensorflow as tf
from keras import backend as K
from keras.layers import Dense, Input
from keras.models import Model
from keras.utils import multi_gpu_model


def initialize_GPU(fraction):
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    config.gpu_options.per_process_gpu_memory_fraction = fraction
    session = tf.Session(config=config)
    return session


sess = initialize_GPU(0.5)
K.set_session(sess)
sess.run(tf.global_variables_initializer())

inputs = Input(shape=(6,))
hidden = Dense(8, activation='relu')(inputs)
outputs = Dense(3, activation='softmax')(hidden)
model = Model(inputs, outputs)
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='categorical_crossentropy')
rng = np.random.RandomState(0)
x = rng.rand(32, 6).astype('float32')
y = np.eye(3)[rng.randint(0, 3, 32)]
parallel.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
read_hidden = K.function([model.input, K.learning_phase()], [hidden, outputs])
features, probabilities = read_hidden([x, 0])
learning_rate = K.get_session().run(parallel.optimizer.learning_rate)
"""


def test_sessions_and_backend_function_run_with_keras2_numbers():
    result = migrated(SESSIONS_AND_FUNCTION)
    assert "parallel_keras.compat.Session(config=config)" in result.migrated
    assert "parallel_keras.compat.function(" in result.migrated
    parallel = run(result, gpus=4)
    single = run(result, gpus=1)
    assert_same_numbers(parallel["model"], single["model"])
    # K.function in inference: the hidden activations and the model's own output.
    np.testing.assert_allclose(
        parallel["probabilities"], parallel["model"].predict(parallel["x"], verbose=0), rtol=1e-5
    )
    assert_same_numbers([parallel["features"]], [single["features"]])
    assert parallel["features"].shape == (32, 8)
    np.testing.assert_allclose(parallel["learning_rate"], 0.01, rtol=1e-6)


VAE = """\
import numpy as np
from keras import backend as K
from keras.layers import Dense, Input, Lambda
from keras.losses import mse
from keras.models import Model
from keras.utils import multi_gpu_model

inputs = Input(shape=(8,))
h = Dense(6, activation='relu')(inputs)
z_mean = Dense(2)(h)
z_log_var = Dense(2)(h)
z = Lambda(lambda args: args[0] + K.exp(0.5 * args[1]) * 0.0)([z_mean, z_log_var])
outputs = Dense(8, activation='sigmoid')(Dense(6, activation='relu')(z))
vae = Model(inputs, outputs)
reconstruction_loss = mse(inputs, outputs) * 8
kl_loss = -0.5 * K.sum(1 + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
vae.add_loss(K.mean(reconstruction_loss + kl_loss))
parallel = multi_gpu_model(vae, gpus=GPUS) if GPUS > 1 else vae
parallel.compile(optimizer='sgd')
x = np.random.RandomState(1).rand(32, 8).astype('float32')
history = parallel.fit(x, None, batch_size=16, epochs=2, shuffle=False, verbose=0)
"""


def _vae_loss(namespace):
    """Keras 2's total: mean over the batch of 8 * mse + KL, computed by hand."""
    model, x = namespace["vae"], namespace["x"]
    import keras

    z_mean, z_log_var = keras.Model(model.inputs, [model.layers[2].output, model.layers[3].output])(
        x
    )
    z_mean, z_log_var = np.asarray(z_mean), np.asarray(z_log_var)
    reconstruction = 8 * np.mean((x - np.asarray(model(x))) ** 2, axis=-1)
    kl = -0.5 * np.sum(1 + z_log_var - z_mean**2 - np.exp(z_log_var), axis=-1)
    return float(np.mean(reconstruction + kl))


def test_vae_add_loss_trains_with_the_loss_added_to_the_total():
    result = migrated(VAE)
    assert "parallel_keras.compat.add_loss(vae, " in result.migrated
    parallel = run(result, gpus=4)
    single = run(result, gpus=1)
    assert_same_numbers(parallel["vae"], single["vae"])
    np.testing.assert_allclose(
        parallel["history"].history["loss"], single["history"].history["loss"], rtol=1e-5
    )
    # The loss trained on is Keras 2's: evaluate reports it for the weights reached.
    loss = parallel["parallel"].evaluate(parallel["x"], None, batch_size=32, verbose=0)
    np.testing.assert_allclose(loss, _vae_loss(parallel), rtol=1e-4)
    # And it moved the weights (the loss was not ignored).
    assert parallel["history"].history["loss"][1] < parallel["history"].history["loss"][0]


IMAGE_GENERATOR = """\
import numpy as np
from keras.layers import Conv2D, Dense, Flatten, Input
from keras.models import Model
from keras.preprocessing.image import ImageDataGenerator
from keras.utils import multi_gpu_model

rng = np.random.RandomState(2)
x = rng.rand(32, 8, 8, 1).astype('float32')
y = np.eye(2)[rng.randint(0, 2, 32)]
# Standardization fitted on the data: Keras 2's, deterministic.
standardize = ImageDataGenerator(
    featurewise_center=True, featurewise_std_normalization=True, rescale=2.0
)
standardize.fit(x)
augment = ImageDataGenerator(rotation_range=20, horizontal_flip=True, width_shift_range=0.1)
inputs = Input(shape=(8, 8, 1))
outputs = Dense(2, activation='softmax')(Dense(4, activation='relu')(Flatten()(inputs)))
model = Model(inputs, outputs)
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='categorical_crossentropy')
train = standardize.flow(x, y, batch_size=16, shuffle=False)
parallel.fit_generator(train, steps_per_epoch=len(train), epochs=1, verbose=0)
weights_after_standardized = [w.copy() for w in model.get_weights()]
# Random augmentation feeds the parallel model too.
parallel.fit_generator(augment.flow(x, y, batch_size=16, seed=4), steps_per_epoch=2, verbose=0)
np.random.seed(3)
batch_x, batch_y = next(augment.flow(x, y, batch_size=8, seed=5))
"""


def test_image_data_generator_runs_keras2_code_and_feeds_fit():
    result = migrated(IMAGE_GENERATOR)
    assert "from parallel_keras.compat import ImageDataGenerator" in result.migrated
    assert "'parallel-keras[keras2]'" in result.report.requirements
    parallel = run(result, gpus=4)
    single = run(result, gpus=1)
    assert_same_numbers(
        parallel["weights_after_standardized"], single["weights_after_standardized"]
    )
    # The same augmentation draws as Keras 2's own ImageDataGenerator (tf_keras is its code).
    reference = tf_keras.preprocessing.image.ImageDataGenerator(
        rotation_range=20, horizontal_flip=True, width_shift_range=0.1
    )
    np.random.seed(3)
    expected_x, expected_y = next(reference.flow(single["x"], single["y"], batch_size=8, seed=5))
    np.testing.assert_allclose(single["batch_x"], expected_x, rtol=1e-6)
    np.testing.assert_array_equal(single["batch_y"], expected_y)


TEXT = """\
import numpy as np
from keras.layers import Dense, Embedding, GlobalAveragePooling1D, Input
from keras.models import Model
from keras.preprocessing.sequence import TimeseriesGenerator, pad_sequences
from keras.preprocessing.text import Tokenizer
from keras.utils import multi_gpu_model

texts = ['the cat sat on the mat', 'the dog ate my homework', 'a cat and a dog'] * 8
labels = np.array([0, 1, 1] * 8)
tokenizer = Tokenizer(num_words=20)
tokenizer.fit_on_texts(texts)
sequences = pad_sequences(tokenizer.texts_to_sequences(texts), maxlen=6)
inputs = Input(shape=(6,))
outputs = Dense(1, activation='sigmoid')(GlobalAveragePooling1D()(Embedding(20, 4)(inputs)))
model = Model(inputs, outputs)
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='binary_crossentropy')
parallel.fit(sequences, labels, batch_size=8, epochs=2, shuffle=False, verbose=0)

series = np.arange(40, dtype='float32').reshape(40, 1) / 40.0
windows = TimeseriesGenerator(series, series, length=4, batch_size=8)
series_in = Input(shape=(4, 1))
series_model = Model(series_in, Dense(1)(GlobalAveragePooling1D()(series_in)))
series_parallel = multi_gpu_model(series_model, gpus=GPUS) if GPUS > 1 else series_model
series_parallel.compile(optimizer='sgd', loss='mse')
series_parallel.fit_generator(windows, steps_per_epoch=len(windows), epochs=2, verbose=0)
"""


def test_tokenizer_and_timeseries_generator_run_as_keras2():
    result = migrated(TEXT)
    assert "from parallel_keras.compat import Tokenizer" in result.migrated
    parallel = run(result, gpus=4)
    single = run(result, gpus=1)
    assert_same_numbers(parallel["model"], single["model"])
    assert_same_numbers(parallel["series_model"], single["series_model"])
    # The vocabulary is Keras 2's own (a saved word_index still matches).
    reference = tf_keras.preprocessing.text.Tokenizer(num_words=20)
    reference.fit_on_texts(parallel["texts"])
    assert parallel["tokenizer"].word_index == reference.word_index
    assert parallel["tokenizer"].to_json() == reference.to_json()
    assert len(parallel["windows"]) == 5


CHECKPOINTS_AND_HELPERS = """\
import os

import numpy as np
from keras import backend as K
from keras.callbacks import ModelCheckpoint
from keras.engine.topology import Layer
from keras.layers import Dense, Input
from keras.layers.merge import _Merge
from keras.models import Model
from keras.utils import conv_utils, multi_gpu_model


class EveryOtherEpoch(ModelCheckpoint):
    def __init__(self, *args, **kwargs):
        super(EveryOtherEpoch, self).__init__(*args, **kwargs)
        self.saves_seen = 0


class WeightedAverage(_Merge):
    def _merge_function(self, inputs):
        return 0.25 * inputs[0] + 0.75 * inputs[1]


class Scale(Layer):
    def __init__(self, size, **kwargs):
        super(Scale, self).__init__(**kwargs)
        self.size = conv_utils.normalize_tuple(size, 1, 'size')

    def build(self, input_shape):
        self.scale = self.add_weight(name='scale', shape=self.size, initializer='ones')
        super(Scale, self).build(input_shape)

    def call(self, inputs):
        return inputs * self.scale


a = Input(shape=(4,))
b = Input(shape=(4,))
merged = WeightedAverage()([Dense(4)(a), Dense(4)(b)])
model = Model([a, b], Dense(1)(Scale(1)(merged)))
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='mse')
rng = np.random.RandomState(3)
xa, xb, y = rng.rand(16, 4), rng.rand(16, 4), rng.rand(16, 1)
pattern = os.path.join(OUT, 'weights_%d_{epoch:02d}.h5' % GPUS)
checkpoint = EveryOtherEpoch(pattern, save_weights_only=True, period=2)
parallel.fit([xa, xb], y, batch_size=8, epochs=4, shuffle=False, verbose=0, callbacks=[checkpoint])
final = os.path.join(OUT, 'final_%s' % GPUS)
model.save_weights(final)
"""


def test_checkpoint_subclass_period_private_helpers_and_computed_saves(tmp_path):
    import os

    import keras

    from parallel_keras import compat

    result = migrated(CHECKPOINTS_AND_HELPERS)
    assert "class EveryOtherEpoch(parallel_keras.callbacks.ModelCheckpoint)" in result.migrated
    assert "from parallel_keras.compat import Merge as _Merge" in result.migrated
    assert "parallel_keras.compat.save_weights(model, final)" in result.migrated
    parallel = run(result, gpus=4, OUT=str(tmp_path))
    single = run(result, gpus=1, OUT=str(tmp_path))
    assert_same_numbers(parallel["model"], single["model"])
    # Keras 2's period: every other epoch, whatever the subclass's __init__.
    saved = sorted(name for name in os.listdir(tmp_path) if name.startswith("weights_4"))
    assert saved == ["weights_4_02.h5", "weights_4_04.h5"], saved  # Keras 2's names.
    # What the 4-device run saved loads on one device with plain Keras.
    reloaded = keras.models.clone_model(single["model"])
    reloaded.load_weights(str(tmp_path / "weights_4_04.h5"))
    assert_same_numbers(reloaded, parallel["model"])
    again = keras.models.clone_model(single["model"])
    compat.load_weights(again, str(tmp_path / "final_4"))
    assert_same_numbers(again, parallel["model"])


SUMMARY_LOGGER = """\
import numpy as np
import tensorflow as tf
from keras.callbacks import Callback
from keras.layers import Dense, Input
from keras.models import Model
from keras.utils import multi_gpu_model


class LossLogger(Callback):
    def __init__(self, log_dir):
        super(LossLogger, self).__init__()
        self.writer = tf.summary.FileWriter(log_dir)

    def on_epoch_end(self, epoch, logs=None):
        summary = tf.Summary(value=[tf.Summary.Value(tag='epoch_loss', simple_value=logs['loss'])])
        self.writer.add_summary(summary, epoch)
        self.writer.flush()


inputs = Input(shape=(3,))
model = Model(inputs, Dense(1)(inputs))
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='mse')
rng = np.random.RandomState(4)
history = parallel.fit(
    rng.rand(16, 3), rng.rand(16, 1), batch_size=8, epochs=2, shuffle=False, verbose=0,
    callbacks=[LossLogger(OUT)],
)
"""


def test_tf1_summary_logging_writes_what_tensorboard_read(tmp_path):
    import tensorflow as tf

    result = migrated(SUMMARY_LOGGER)
    assert "parallel_keras.compat.FileWriter(log_dir)" in result.migrated
    namespace = run(result, gpus=4, OUT=str(tmp_path))
    logged = [
        value.simple_value
        for event_file in tmp_path.iterdir()
        for event in tf.compat.v1.train.summary_iterator(str(event_file))
        for value in event.summary.value
        if value.tag == "epoch_loss"
    ]
    np.testing.assert_allclose(logged, namespace["history"].history["loss"], rtol=1e-6)


ENQUEUED = """\
import numpy as np
from keras.layers import Dense, Input
from keras.models import Model
from keras.utils import multi_gpu_model
from keras.utils.data_utils import GeneratorEnqueuer

def batches():
    rng = np.random.RandomState(0)
    while True:
        x = rng.rand(8, 3).astype('float32')
        yield x, x.sum(axis=1, keepdims=True)

inputs = Input(shape=(3,))
model = Model(inputs, Dense(1)(inputs))
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer='sgd', loss='mse')
enqueuer = GeneratorEnqueuer(batches(), use_multiprocessing=False, wait_time=0.01)
enqueuer.start(workers=1, max_queue_size=4)
output = enqueuer.get()
seen = []
for step in range(3):
    x, y = next(output)
    seen.append(x)
    parallel.train_on_batch(x, y)
enqueuer.stop()
"""


def test_generator_enqueuer_runs_the_keras2_generator_ahead_of_the_loop():
    result = migrated(ENQUEUED)
    assert "from parallel_keras.compat import GeneratorEnqueuer" in result.migrated
    parallel = run(result, gpus=4)
    single = run(result, gpus=1)
    assert_same_numbers(parallel["model"], single["model"])
    # The batches are the generator's, in its order.
    rng = np.random.RandomState(0)
    for x in parallel["seen"]:
        np.testing.assert_array_equal(x, rng.rand(8, 3).astype("float32"))


IMAGE_OCR_DICT_BATCHES = """\
import numpy as np
from keras import backend as K
from keras.layers import Dense, Input, Lambda
from keras.models import Model
from keras.utils import multi_gpu_model


class TextImageGenerator:
    def __init__(self, batch_size):
        self.batch_size = batch_size
        self.rng = np.random.RandomState(0)

    def get_batch(self):
        inputs = {'the_input': self.rng.rand(self.batch_size, 6).astype('float32'),
                  'the_labels': self.rng.rand(self.batch_size, 2).astype('float32'),
                  'source_str': np.array(['word'] * self.batch_size)}
        outputs = {'ctc': np.zeros([self.batch_size])}
        return (inputs, outputs)

    def next_train(self):
        while 1:
            yield self.get_batch()


image = Input(shape=(6,), name='the_input')
labels = Input(shape=(2,), name='the_labels')
prediction = Dense(2, name='softmax')(image)
loss_out = Lambda(lambda args: K.sum(K.square(args[0] - args[1]), axis=1, keepdims=True),
                  name='ctc')([prediction, labels])
model = Model(inputs=[image, labels], outputs=loss_out)
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(loss={'ctc': lambda y_true, y_pred: y_pred}, optimizer='sgd')
generator = TextImageGenerator(8)
parallel.fit_generator(generator=generator.next_train(), steps_per_epoch=3, epochs=1,
                       validation_data=generator.next_train(), validation_steps=1, verbose=0)
score = parallel.evaluate_generator(TextImageGenerator(8).next_train(), 1)
"""


def test_image_ocr_dict_batches_with_strings_train_as_keras2_did():
    # Keras 2's image_ocr idiom: dict batches with a `source_str` of strings no
    # input has; Keras 2 read the inputs by name, Keras 3 fails on the strings.
    result = migrated(IMAGE_OCR_DICT_BATCHES)
    assert "parallel_keras.compat.named_batches(parallel, generator.next_train())" in (
        result.migrated
    )
    parallel, single = run(result, 4), run(result, 1)
    assert_same_numbers(parallel["model"], single["model"])
    # Scored on a fresh generator: fit may read a different number of batches
    # ahead of the shared one on 4 devices than on one.
    np.testing.assert_allclose(parallel["score"], single["score"], rtol=1e-5)
    assert np.isfinite(single["score"])


KERAS2_LIST_BATCHES = """\
import numpy as np
from keras.layers import Dense, Input, concatenate
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import Sequence, multi_gpu_model

ROWS, BATCH = 8, 4
rng = np.random.RandomState(0)
LEFT, RIGHT = rng.rand(ROWS, 3).astype('float32'), rng.rand(ROWS, 3).astype('float32')
FIRST = rng.rand(ROWS, 2).astype('float32')
SECOND = rng.randint(0, 2, (ROWS, 1)).astype('float32')


def make_inputs(rows):
    return [LEFT[rows], RIGHT[rows]]


def make_targets(rows):
    targets = []
    targets.append(FIRST[rows])
    targets.append(SECOND[rows])
    return targets


def batches():
    while True:
        for i in range(ROWS // BATCH):
            rows = slice(i * BATCH, (i + 1) * BATCH)
            x = make_inputs(rows)
            y = make_targets(rows)
            yield x, y


def inputs_only():
    for i in range(ROWS // BATCH):
        yield make_inputs(slice(i * BATCH, (i + 1) * BATCH))


class Batches(Sequence):
    def __init__(self):
        self.n = ROWS // BATCH

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.__data_generation(slice(i * BATCH, (i + 1) * BATCH))

    def __data_generation(self, rows):
        return [LEFT[rows], RIGHT[rows]], [FIRST[rows], SECOND[rows]]


left, right = Input(shape=(3,)), Input(shape=(3,))
hidden = Dense(4, activation='tanh')(concatenate([left, right]))
first = Dense(2, name='first')(hidden)
second = Dense(1, activation='sigmoid', name='second')(hidden)
model = template = Model(inputs=[left, right], outputs=[first, second])
initial = model.get_weights()
if GPUS > 1:
    model = multi_gpu_model(model, gpus=GPUS)
model.compile(optimizer=SGD(lr=0.1), loss=['mse', 'binary_crossentropy'])
model.fit_generator(batches(), steps_per_epoch=ROWS // BATCH, epochs=2, verbose=0)
model.fit_generator(Batches(), epochs=1, shuffle=False, verbose=0)
losses = model.evaluate_generator(Batches())
predicted = model.predict_generator(inputs_only(), steps=ROWS // BATCH)
"""


def _trained_on_tuples(initial):
    """The script's model trained and scored on the same batches, as tuples."""
    import keras

    left, right = keras.Input((3,)), keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh")(keras.layers.concatenate([left, right]))
    first = keras.layers.Dense(2, name="first")(hidden)
    second = keras.layers.Dense(1, activation="sigmoid", name="second")(hidden)
    model = keras.Model((left, right), (first, second))
    model.set_weights(initial)
    model.compile(keras.optimizers.SGD(0.1), ["mse", "binary_crossentropy"])
    rng = np.random.RandomState(0)
    inputs = rng.rand(8, 3).astype("float32"), rng.rand(8, 3).astype("float32")
    targets = rng.rand(8, 2).astype("float32"), rng.randint(0, 2, (8, 1)).astype("float32")
    for _ in range(3):  # fit_generator: 2 epochs of the generator, 1 of the Sequence
        for rows in (slice(0, 4), slice(4, 8)):
            model.train_on_batch(tuple(x[rows] for x in inputs), tuple(y[rows] for y in targets))
    losses = model.evaluate(inputs, targets, batch_size=4, verbose=0)
    return model, losses, model.predict(inputs, batch_size=4, verbose=0)


@pytest.mark.parametrize("gpus", [1, 4])
def test_keras2_list_batches_from_helpers_train_a_plain_model_as_tuples_do(gpus):
    # Keras 2 read `[x1, x2], [y1, y2]` batches (made by helpers the generator
    # and the Sequence call); Keras 3's fit/evaluate/predict refuse the lists.
    result = migrated(KERAS2_LIST_BATCHES)
    assert result.migrated.count("parallel_keras.compat.list_batches(") == 4
    assert "list_batches(inputs_only(), inputs_only=True)" in result.migrated
    got = run(result, gpus)
    expected_model, expected_losses, expected_predicted = _trained_on_tuples(got["initial"])
    assert_same_numbers(got["template"], expected_model)
    np.testing.assert_allclose(got["losses"], expected_losses, rtol=1e-5)
    assert len(got["predicted"]) == 2
    for a, b in zip(got["predicted"], expected_predicted):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
