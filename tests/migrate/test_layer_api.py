# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/layer_api.py: CuDNN layers, '/' in names, trainable_weights setters."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import layer_api
from tests.migrate.helpers import check_flag, check_rewrite, check_rules

REWRITES = {
    "cudnn_lstm": (
        "from keras.layers import CuDNNLSTM, Dense\nx = CuDNNLSTM(64, return_sequences=True)(i)\n",
        "from keras.layers import LSTM, Dense\n"
        "x = LSTM(64, return_sequences=True, recurrent_activation='sigmoid')(i)\n",
    ),
    "cudnn_gru_attribute": (
        "import keras\ny = keras.layers.CuDNNGRU(3)(x)\n",
        "import keras\ny = keras.layers.GRU(3, recurrent_activation='sigmoid', reset_after=True)(x)\n",
    ),
    "gpu_branch_with_both_imported": (
        "from keras.layers import LSTM, CuDNNLSTM\nrnn = CuDNNLSTM if gpus > 0 else LSTM\n",
        "from keras.layers import LSTM\nrnn = LSTM if gpus > 0 else LSTM\n",
    ),
    "cudnn_module": (
        "from keras.layers.cudnn_recurrent import CuDNNGRU\nl = CuDNNGRU(4)\n",
        "from keras.layers import GRU\nl = GRU(4, recurrent_activation='sigmoid', reset_after=True)\n",
    ),
    "slash_name_and_lookup": (
        "from keras.layers import Dense\nd = Dense(3, name='block1/dense')(y)\n"
        "m.get_layer('block1/dense')\n",
        "from keras.layers import Dense\nd = Dense(3, name='block1_dense')(y)\n"
        "m.get_layer('block1_dense')\n",
    ),
    "computed_slash_name": (
        "from keras.layers import Dense\ne = Dense(3, name=f'b{i}/d')(y)\n"
        "f = Dense(3, name='{}/conv'.format(p))(y)\ng = Dense(3, name=p + '/bn')(y)\n",
        "from keras.layers import Dense\ne = Dense(3, name=f'b{i}_d')(y)\n"
        "f = Dense(3, name='{}_conv'.format(p))(y)\ng = Dense(3, name=p + '_bn')(y)\n",
    ),
    "project_layer_slash_name": (
        "o = MyAdd(name=f'cell_{i}/fnode0/add')([a, b])\n",
        "o = MyAdd(name=f'cell_{i}_fnode0_add')([a, b])\n",
    ),
    "trainable_weights_tracked": (
        "import keras\nclass L(keras.layers.Layer):\n    def build(self, s):\n"
        "        self.w = self.add_weight(shape=(2,))\n        self.trainable_weights = [self.w]\n",
        "import keras\nclass L(keras.layers.Layer):\n    def build(self, s):\n"
        "        self.w = self.add_weight(shape=(2,))\n",
    ),
    "plain_string_names_untouched": (
        "import os\np = os.path.join('a/b', 'c')\n",
        "import os\np = os.path.join('a/b', 'c')\n",
    ),
    # A bytes literal is no layer name (Keras rejects it on its own); the
    # rule read it as text and stopped the whole run with a TypeError.
    "bytes_names_untouched": (
        "from keras.layers import Dense\nd = Dense(3, name=b'block1/dense')(y)\n"
        "e = Dense(3, name=b'b/' + s)(y)\n",
        "from keras.layers import Dense\nd = Dense(3, name=b'block1/dense')(y)\n"
        "e = Dense(3, name=b'b/' + s)(y)\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_cudnn_lstm_equals_keras3_lstm_computation():
    import keras
    import numpy as np

    layer = keras.layers.LSTM(4, recurrent_activation="sigmoid")
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    out = layer(x)
    # Keras 2's CuDNNLSTM: i, f, c, o gates with sigmoid, tanh cell (the same weights).
    kernel, recurrent, bias = (w.numpy() for w in layer.weights)
    h = c = np.zeros((2, 4), "float32")

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    for t in range(5):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    np.testing.assert_allclose(out.numpy(), h, atol=1e-5)


FLAGS = {
    "trainable_weights_of_sublayer": (
        "import keras\nclass L(keras.layers.Layer):\n    def build(self, s):\n"
        "        self.trainable_weights = self.inner.weights\n",
        "self.add_weight",
    ),
}


@pytest.mark.parametrize("before, word", FLAGS.values(), ids=FLAGS.keys())
def test_flags(before, word):
    check_flag(before, word)


LAYER = """\
import keras
class L(keras.layers.Layer):
    def build(self, s):
        self.w = self.add_weight(shape=(2,))
        {line}
"""


@pytest.mark.parametrize(
    "line",
    [
        "self.trainable_weights.append(self.w)",
        "self._trainable_weights += [self.w]",
        "self._trainable_weights = []",
    ],
)
def test_redundant_weight_list_updates_removed(line):
    check_rewrite(LAYER.format(line=line), LAYER.format(line="").rstrip() + "\n")


@pytest.mark.parametrize(
    "line",
    [
        "self.trainable_weights.append(self.v)",
        "self._trainable_weights.extend(self.inner.weights)",
    ],
)
def test_other_weight_list_updates_flagged(line):
    check_flag(LAYER.format(line=line), "self.add_weight")


def test_cudnn_import_inside_a_function_keeps_its_local_name():
    # textgenrnn's model.py: a function-local `from keras.layers import LSTM`
    # would make LSTM local to the whole function (UnboundLocalError below).
    before = """\
        from keras.layers import LSTM


        def new_rnn(size, gpus):
            if gpus:
                from keras.layers import CuDNNLSTM
                return CuDNNLSTM(size)
            return LSTM(size)
        """
    after = """\
        from keras.layers import LSTM


        def new_rnn(size, gpus):
            if gpus:
                from keras.layers import LSTM as CuDNNLSTM
                return CuDNNLSTM(size, recurrent_activation='sigmoid')
            return LSTM(size)
        """
    result = check_rules(before, after, layer_api.LayerApiRule)
    namespace: dict = {}
    exec(result.migrated, namespace)  # The migrated module, as Python runs it.
    on_gpu, plain = namespace["new_rnn"](4, 1), namespace["new_rnn"](4, 0)
    assert on_gpu.recurrent_activation.__name__ == "sigmoid"
    assert plain.recurrent_activation.__name__ == "sigmoid"  # Keras 3's LSTM default.
    assert type(on_gpu) is type(plain)


SLASHED = """\
import keras
from keras import layers


class WeightedAdd(layers.Layer):
    def call(self, inputs):
        return inputs[0] + inputs[1]


def block(name):
    dense = layers.Dense(2, name=f'{name}/dense')
    norm = layers.BatchNormalization(name='%s/bn' % name)
    return lambda x: norm(dense(x))


inputs = keras.Input((2,))
cells = [block(name=f'fpn_cells/cell_{i}')(inputs) for i in range(2)]
merged = WeightedAdd(name=f'fpn_cells/cell_{len(cells)}/add')(cells)
model = keras.Model(inputs, merged)
"""


def test_layer_names_with_slashes_build_under_keras3():
    result = migrate.migrate_source(SLASHED)
    assert not result.report.flags
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    names = [layer.name for layer in namespace["model"].layers[1:]]
    assert "fpn_cells_cell_0_dense" in names and "fpn_cells_cell_1_bn" in names
    assert names[-1] == "fpn_cells_cell_2_add"


SPECTRAL_CONV = """\
import numpy as np
from keras import backend as K
from keras.layers import Conv2D, Input
from keras.models import Model


class ScaledConv2D(Conv2D):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=self.kernel_size + (input_shape[-1], self.filters),
                                      initializer='ones', name='kernel')
        self.u = self.add_weight(shape=(1, self.kernel.shape[-1]), initializer='ones',
                                 name='u', trainable=False)
        self.bias = None
        self.built = True

    def call(self, inputs):
        return K.conv2d(inputs, self.kernel * 0.5 * self.u[0], padding='same')


inputs = Input(shape=(4, 4, 1))
model = Model(inputs, ScaledConv2D(2, (3, 3))(inputs))
out = model.predict(np.ones((1, 4, 4, 1), 'float32'), verbose=0)
"""


def test_a_conv_subclass_setting_its_own_kernel_builds_and_computes():
    result = migrate.migrate_source(SPECTRAL_CONV)
    assert not result.report.flags
    assert "self._kernel = self.add_weight(" in result.migrated
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    # The centre pixel sees nine ones: 9 * 0.5 on both filters.
    np.testing.assert_allclose(namespace["out"][0, 1, 1], [4.5, 4.5], rtol=1e-6)
    assert [w.name for w in namespace["model"].weights] == ["kernel", "u"]


SPECTRAL_NORM_LAYERS = """\
import numpy as np
import tensorflow as tf
from keras import backend as K
from keras.layers import Conv2D, Dense, Flatten, Input
from keras.models import Model, model_from_json


class ConvSN2D(Conv2D):
    def build(self, input_shape):
        kernel_shape = self.kernel_size + (input_shape[-1], self.filters)
        self.kernel = self.add_weight(shape=kernel_shape, initializer='glorot_uniform',
                                      name='kernel')
        self.bias = self.add_weight(shape=(self.filters,), initializer='zeros', name='bias')
        self.u = self.add_weight(shape=(1, self.filters), initializer='ones', name='sn',
                                 trainable=False)
        self.built = True

    def call(self, inputs, training=None):
        w = K.reshape(self.kernel, [-1, self.filters])
        v = K.l2_normalize(K.dot(self.u, K.transpose(w)))
        u = K.l2_normalize(K.dot(v, w))
        sigma = K.dot(K.dot(v, w), K.transpose(u))
        with tf.control_dependencies([self.u.assign(u)]):
            w_bar = K.reshape(w / sigma, K.int_shape(self.kernel))
        return K.bias_add(K.conv2d(inputs, w_bar, padding=self.padding), self.bias)


class DenseSN(Dense):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name='kernel')
        self.u = self.add_weight(shape=(1, self.units), initializer='ones', name='sn',
                                 trainable=False)
        self.bias = None
        self.built = True

    def call(self, inputs):
        return K.dot(inputs, self.kernel) * K.sum(self.u)


inputs = Input(shape=(4, 4, 2))
outputs = DenseSN(3)(Flatten()(ConvSN2D(2, (3, 3), padding='same')(inputs)))
model = Model(inputs, outputs)
model.compile(optimizer='sgd', loss='mse')
rng = np.random.RandomState(0)
x = rng.rand(8, 4, 4, 2).astype('float32')
model.fit(x, rng.rand(8, 3), batch_size=4, epochs=1, shuffle=False, verbose=0)
model.save_weights(WEIGHTS_PATH)
rebuilt = model_from_json(model.to_json(), custom_objects={'ConvSN2D': ConvSN2D,
                                                           'DenseSN': DenseSN})
rebuilt.load_weights(WEIGHTS_PATH)
"""


@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
def test_a_layer_subclass_adding_its_own_weights_saves_and_reloads_them_all(tmp_path, suffix):
    # Keras 3's Conv2D/Dense save only kernel and bias; the spectral-norm `sn`
    # vector (non-trainable, updated by every training call) must reload too,
    # from Keras 2's HDF5 layout (`.h5`, through compat) and from `.weights.h5`.
    result = migrate.migrate_source(SPECTRAL_NORM_LAYERS)
    assert not result.report.flags, result.report.flags
    assert "class ConvSN2D(parallel_keras.compat.Keras2Weights, Conv2D):" in result.migrated
    assert "class DenseSN(parallel_keras.compat.Keras2Weights, Dense):" in result.migrated
    assert "self._kernel = self.add_weight(shape=(input_shape[-1]" in result.migrated
    namespace: dict = {"WEIGHTS_PATH": str(tmp_path / f"model{suffix}")}
    exec(result.migrated, namespace)  # noqa: S102
    model, rebuilt = namespace["model"], namespace["rebuilt"]
    assert [w.name for w in rebuilt.weights] == ["kernel", "bias", "sn", "kernel", "sn"]
    trained_u = model.layers[1].u.numpy()
    assert not np.allclose(trained_u, 1.0)  # training moved it: the reload is not vacuous
    for saved, loaded in zip(model.weights, rebuilt.weights, strict=True):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())
    x = namespace["x"]
    np.testing.assert_array_equal(model.predict(x, verbose=0), rebuilt.predict(x, verbose=0))
