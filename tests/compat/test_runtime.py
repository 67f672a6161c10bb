# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.compat on its own: each Keras 2 path keeps Keras 2's meaning."""

from __future__ import annotations

import os

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import parallel_keras
from parallel_keras import compat


def _dense_model(name_prefix=""):
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="relu", name=f"{name_prefix}hidden")(inputs)
    normalized = keras.layers.BatchNormalization(name=f"{name_prefix}norm")(hidden)
    return keras.Model(inputs, keras.layers.Dense(2, name=f"{name_prefix}out")(normalized))


# -- save_weights / load_weights --------------------------------------------


@pytest.mark.parametrize("suffix", ["", ".h5", ".hdf5", ".ckpt"])
def test_save_weights_writes_keras2_hdf5_at_exactly_the_computed_path(tmp_path, suffix):
    model = _dense_model()
    path = os.path.join(tmp_path, "epoch_%d" % 3) + suffix
    compat.save_weights(model, path)
    assert os.listdir(tmp_path) == [os.path.basename(path)]
    with h5py.File(path, "r") as file:  # Keras 2's layout: layer_names, weight_names.
        names = [n.decode() if isinstance(n, bytes) else n for n in file.attrs["layer_names"]]
        assert names == [layer.name for layer in model.layers]
    fresh = _dense_model()
    assert compat.load_weights(fresh, path)
    for saved, loaded in zip(model.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(saved, loaded)


def test_keras2_itself_reads_what_save_weights_wrote(tmp_path):
    model = _dense_model()
    model.layers[2].moving_mean.assign([1.0, 2.0, 3.0, 4.0])
    path = str(tmp_path / "weights_from_run")
    compat.save_weights(model, path)
    inputs = tf_keras.Input((3,))
    hidden = tf_keras.layers.Dense(4, activation="relu")(inputs)
    normalized = tf_keras.layers.BatchNormalization()(hidden)
    keras2 = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(normalized))
    keras2.load_weights(path)  # By topology, as Keras 2 loaded its own files.
    x = np.random.RandomState(0).rand(5, 3).astype("float32")
    np.testing.assert_allclose(keras2.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_a_parallel_model_saves_its_template(tmp_path):
    model = _dense_model()
    parallel = parallel_keras.multi_gpu_model(model, gpus=4)
    path = str(tmp_path / "parallel.h5")
    compat.save_weights(parallel, path)
    fresh = _dense_model()
    compat.load_weights(fresh, path)
    for saved, loaded in zip(model.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(saved, loaded)


def test_save_weights_refuses_to_overwrite_when_told(tmp_path):
    path = tmp_path / "w"
    path.write_bytes(b"kept")
    with pytest.raises(FileExistsError, match="overwrite=False"):
        compat.save_weights(_dense_model(), path, overwrite=False)
    assert path.read_bytes() == b"kept"


# -- K.function -------------------------------------------------------------


def test_function_feeds_the_learning_phase_as_keras2_did():
    inputs = keras.Input((8,))
    dropped = keras.layers.Dropout(0.5)(inputs)
    read = compat.function([inputs, compat.learning_phase()], [dropped])
    x = np.ones((4, 8), "float32")
    np.testing.assert_array_equal(read([x, 0])[0], x)  # Inference: no dropout.
    training = read([x, 1])[0]
    assert set(np.unique(training)) <= {0.0, 2.0} and (training == 0).any()


def test_function_refuses_keras2_updates():
    inputs = keras.Input((2,))
    with pytest.raises(ValueError, match="GradientTape"):
        compat.function([inputs], [inputs], updates=[("v", 1)])


# -- Sessions ---------------------------------------------------------------


def test_set_session_carries_gpu_options_to_tf_config(monkeypatch):
    gpus = [
        tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU"),
        tf.config.PhysicalDevice("/physical_device:GPU:1", "GPU"),
    ]
    calls = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: list(gpus))
    monkeypatch.setattr(
        tf.config, "set_visible_devices", lambda devices, kind=None: calls.append(("v", devices))
    )
    monkeypatch.setattr(
        tf.config.experimental,
        "set_memory_growth",
        lambda device, value: calls.append(("g", device.name, value)),
    )
    config = tf.compat.v1.ConfigProto()
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = "1"
    compat.set_session(compat.Session(config=config))
    assert calls == [("v", [gpus[1]]), ("g", "/physical_device:GPU:1", True)]


def test_get_session_runs_eager_values_and_initializers():
    session = compat.get_session()
    variable = tf.Variable(3.0)
    assert session.run([variable, tf.compat.v1.global_variables_initializer()]) == [3.0, None]
    with pytest.raises(ValueError, match="tf1_graph"):
        session.run(variable, feed_dict={"x": 1})


# -- Private Keras 2 helpers ------------------------------------------------


def test_merge_subclass_is_keras2s_merge_contract():
    class RandomWeightedAverage(compat.Merge):  # The WGAN-GP's, with fixed weights.
        def _merge_function(self, inputs):
            return 0.25 * inputs[0] + 0.75 * inputs[1]

    a, b = keras.Input((2, 2)), keras.Input((2, 2))
    model = keras.Model([a, b], RandomWeightedAverage()([a, b]))
    assert model.output_shape == (None, 2, 2)
    out = model.predict([np.zeros((1, 2, 2)), np.ones((1, 2, 2))], verbose=0)
    np.testing.assert_allclose(out, np.full((1, 2, 2), 0.75))


def test_conv_utils_match_keras2():
    from parallel_keras.compat import conv_utils

    assert conv_utils.normalize_tuple(3, 2, "kernel_size") == (3, 3)
    assert conv_utils.normalize_tuple((1, 2), 2, "strides") == (1, 2)
    with pytest.raises(ValueError, match="kernel_size"):
        conv_utils.normalize_tuple((1, 2, 3), 2, "kernel_size")
    assert conv_utils.conv_output_length(32, 3, "valid", 2) == 15
    assert conv_utils.conv_output_length(32, 3, "same", 2) == 16
    assert conv_utils.deconv_length(16, 2, 3, "same", None) == 32


def test_container_takes_keras1_keywords():
    inputs = keras.Input((2,))
    outputs = keras.layers.Dense(1)(inputs)
    container = compat.Container(input=inputs, output=outputs)
    assert isinstance(container, keras.Model) and container.output_shape == (None, 1)


@pytest.mark.parametrize("weights", [None, "imagenet"])
@pytest.mark.parametrize("require_flatten", [False, True])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize(
    "input_shape",
    [None, (224, 224, 3), (3, 224, 224), (64, 64, 1), (1, 64, 64), (None, None, 3), (16, 16, 3)],
)
def test_obtain_input_shape_is_keras2s(input_shape, data_format, require_flatten, weights):
    # Keras 2's own function, as tf_keras still ships it (privately).
    from tf_keras.src.applications import imagenet_utils

    def outcome(function):
        try:
            return function(
                input_shape,
                default_size=224,
                min_size=32,
                data_format=data_format,
                require_flatten=require_flatten,
                weights=weights,
            )
        except ValueError:
            return ValueError

    assert outcome(compat.obtain_input_shape) == outcome(imagenet_utils.obtain_input_shape)


def test_multi_input_image_batches_are_tuples_keras3_fit_takes():
    images = np.random.RandomState(0).rand(8, 4, 4, 1).astype("float32")
    extra = np.arange(8, dtype="float32").reshape(8, 1)
    targets = np.zeros((8, 1), "float32")
    iterator = compat.ImageDataGenerator().flow((images, extra), targets, batch_size=4)
    (batch_images, batch_extra), batch_targets = iterator[0]  # A tuple, not Keras 2's list.
    assert isinstance(iterator[0][0], tuple) and batch_images.shape == (4, 4, 4, 1)
    image_input, extra_input = keras.Input((4, 4, 1)), keras.Input((1,))
    joined = keras.layers.Concatenate()([keras.layers.Flatten()(image_input), extra_input])
    model = keras.Model([image_input, extra_input], keras.layers.Dense(1)(joined))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(iterator, epochs=1, verbose=0)
    assert len(iterator) == 2 and iterator.n == 8  # Keras 2's attributes stay.


def test_a_by_name_load_with_no_namesake_loads_nothing_as_keras2_did(tmp_path):
    from tests import test_legacy_cudnn as cudnn

    path = str(tmp_path / "vgg_like.h5")
    dense_weights = [np.full((cudnn.UNITS, 2), 0.1, "float32"), np.zeros(2, "float32")]
    cudnn._write_keras2_file(
        path, "lstm", False, "single", [cudnn._cudnn_weights("lstm", 1)], dense_weights
    )
    inputs = keras.Input((cudnn.TIMESTEPS, cudnn.FEATURES))
    rnn = keras.layers.LSTM(cudnn.UNITS, name="conv1_1")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(rnn))
    before = [w.copy() for w in model.get_weights()]
    assert compat.load_weights(model, path, by_name=True) == []
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    # Without by_name, Keras 2 matched the layers in order: they load.
    assert len(compat.load_weights(model, path)) == 2
    np.testing.assert_array_equal(model.get_layer("head").get_weights()[0], dense_weights[0])
