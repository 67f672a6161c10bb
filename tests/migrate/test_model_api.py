# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/model_api.py: print_summary, sample_weight_mode, add_loss, dict targets, GAN."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import migrate
from tests.migrate.helpers import check_flag, check_rewrite, run

REWRITES = {
    "print_summary": (
        "from keras.utils import print_summary, to_categorical\nprint_summary(m, line_length=90)\n",
        "from keras.utils import to_categorical\nm.summary(line_length=90)\n",
    ),
    "print_summary_positional": (
        "import keras\nkeras.utils.print_summary(m, 90)\n",
        "import keras\nm.summary(line_length=90)\n",
    ),
    "sample_weight_mode_temporal": (
        "m.compile('adam', 'mse', sample_weight_mode='temporal')\n",
        "m.compile('adam', 'mse')\n",
    ),
    "layer_add_loss_inputs": (
        "class L(keras.layers.Layer):\n    def call(self, x):\n"
        "        self.add_loss(keras.ops.mean(x), inputs=x)\n        return x\n",
        "class L(keras.layers.Layer):\n    def call(self, x):\n"
        "        self.add_loss(keras.ops.mean(x))\n        return x\n",
    ),
    "sample_weight_mode_none": (
        "m.compile(optimizer='adam', loss='mse', sample_weight_mode=None)\n",
        "m.compile(optimizer='adam', loss='mse')\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


GAN = """\
d.compile(optimizer='adam', loss='binary_crossentropy')
d.trainable = False
combined = Model(z, d(g(z)))
combined.compile(optimizer='adam', loss='binary_crossentropy')
"""
FINE_TUNING = """\
model.compile(optimizer='adam', loss='mse')
base.trainable = True
model.compile(optimizer='adam', loss='mse')
"""


def test_gan_trainable_flagged_at_second_compile():
    result = check_flag(
        GAN,
        "ParallelModel",
        "`d.trainable = True` before d.train_on_batch",
        "`d.trainable = False` before combined.train_on_batch",
    )
    assert [flag.line for flag in result.report.flags] == [4]


def test_fine_tuning_recompile_not_flagged():
    assert not run(FINE_TUNING).report.flags


FLAGS = {
    "dict_targets_single_output": (
        "from keras.models import Model\nm = Model(inputs=x, outputs=loss_out)\n"
        "m.fit(data, {'ctc': np.zeros(n)})\n",
        "several or dict outputs",
    ),
    "sample_weight_mode_computed": (
        "m.compile('adam', 'mse', sample_weight_mode=mode)\n",
        "remove it",
    ),
}


@pytest.mark.parametrize("before, word", FLAGS.values(), ids=FLAGS.keys())
def test_flags(before, word):
    check_flag(before, word)


def test_layer_add_loss_not_flagged():
    source = (
        "import keras\nclass L(keras.layers.Layer):\n    def call(self, x):\n"
        "        self.add_loss(x)\n        return x\n"
    )
    assert not run(source).report.flags


def test_dict_targets_on_multi_output_model_not_flagged():
    source = "from keras.models import Model\nm = Model(x, [a, b])\nm.fit(x, {'a': y, 'b': z})\n"
    assert not run(source).report.flags


CTC_GENERATOR = """\
model.compile(loss={'ctc': lambda y_true, y_pred: y_pred}, optimizer=sgd)

class TextImageGenerator(keras.callbacks.Callback):
    def get_batch(self, index, size):
        inputs = {'the_input': x, 'the_labels': labels}
        outputs = {'ctc': np.zeros([size])}
        return (inputs, outputs)

    def next_train(self):
        while 1:
            yield self.get_batch(0, 32)
"""


def test_ctc_generator_dict_batches_read_by_name_not_flagged():
    # Keras 2's image_ocr idiom: `next_train` yields `get_batch`'s dict batches;
    # the fit call's data goes through compat.named_batches (rules/named_batches.py).
    result = run(
        CTC_GENERATOR + "model.fit_generator(generator=gen.next_train(), steps_per_epoch=2)\n"
    )
    assert not result.report.flags
    assert "x=parallel_keras.compat.named_batches(model, gen.next_train())" in result.migrated


def test_dict_targets_matching_one_loss_key_flagged_in_fit():
    check_flag(
        "model.compile(loss={'ctc': f}, optimizer='sgd')\nmodel.fit(x, {'ctc': y})\n",
        "the target array itself",
    )


def test_keras3_weights_each_timestep_without_sample_weight_mode():
    import keras
    import numpy as np

    inputs = keras.Input((5, 3))
    model = keras.Model(inputs, keras.layers.TimeDistributed(keras.layers.Dense(2))(inputs))
    model.compile(loss="mse", optimizer="sgd")  # What the rewrite leaves of 'temporal'.
    rng = np.random.default_rng(0)
    x, y = rng.random((4, 5, 3), "float32"), rng.random((4, 5, 2), "float32")
    weights = np.zeros((4, 5), "float32")
    weights[:, 0] = 1.0
    per_step = ((model.predict(x, verbose=0) - y) ** 2).mean(-1)
    loss = model.evaluate(x, y, sample_weight=weights, verbose=0)
    # Keras 2.3's temporal mode: per-step losses times the weights, over batch * steps.
    np.testing.assert_allclose(loss, (per_step * weights).sum() / weights.size, rtol=1e-5)


def test_parallel_models_keep_keras2_semantics_so_nothing_is_flagged():
    source = (
        "from keras.utils import multi_gpu_model\n"
        "pd = multi_gpu_model(d, gpus=2)\n"
        "pd.compile(optimizer='adam', loss='binary_crossentropy')\n"
        "pd.trainable = False\n"
        "pc = multi_gpu_model(combined, gpus=2)\n"
        "pc.compile(optimizer='adam', loss='binary_crossentropy')\n"
        "pm = multi_gpu_model(m, gpus=2)\n"
        "pm.compile(loss={'ctc': lambda y_true, y_pred: y_pred}, optimizer='sgd')\n"
        "def batch():\n"
        "    return x, {'ctc': y}\n"
    )
    assert not run(source).report.flags


OUTPUTS_SETTER = """\
import numpy as np
from keras.layers import Conv2D, Input, Lambda
from keras.models import Model

image = Input(shape=(8, 8, 3))
x = Conv2D(4, 3, padding='same', name='c1')(image)
x = Conv2D(4, 3, padding='same', name='c2')(x)
features = Model(image, Conv2D(2, 3, padding='same', name='c3')(x))
features.outputs = [features.layers[i].output for i in (1, 2)]
source = Input(shape=(8, 8, 3))
model = Model(inputs=source, outputs=features(Lambda(lambda t: t * 2.0)(source)))
data = np.linspace(0, 1, 2 * 8 * 8 * 3, dtype='float32').reshape(2, 8, 8, 3)
first, second = model.predict(data, verbose=0)
"""


def test_setting_a_models_outputs_points_it_at_those_layers():
    result = migrate.migrate_source(OUTPUTS_SETTER)
    assert not result.report.flags
    assert (
        "features = keras.Model(\n    features.inputs,\n    [features.layers[i].output for i in"
        in result.migrated
    )
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    features, data = namespace["features"], namespace["data"]
    c1, c2 = features.get_layer("c1"), features.get_layer("c2")
    np.testing.assert_allclose(namespace["first"], c1(data * 2.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(namespace["second"], c2(c1(data * 2.0)), rtol=1e-5, atol=1e-6)


def test_a_class_setting_its_own_outputs_list_is_left_alone():
    source = "class Tracker:\n    def reset(self):\n        self.outputs = []\n"
    assert migrate.migrate_source(source).migrated == source
