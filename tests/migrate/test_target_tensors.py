# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/target_tensors.py: placeholders given to compile's target_tensors."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import target_tensors
from tests.migrate.helpers import changes, check_flag, check_rewrite, flags, run

# A matting-style loss: y_true carries 3 channels (alpha, mask, weight), the
# model predicts 1; Keras 2 needed the placeholder to accept that target.
_SCRIPT = """\
import numpy as np
import keras
import tensorflow as tf
from keras import backend as K


def masked_loss(y_true, y_pred):
    diff = (y_pred[..., 0] - y_true[..., 0]) * y_true[..., 1]
    return K.sum(K.square(diff)) / (K.sum(y_true[..., 1]) + 1e-6)


model = keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Conv2D(1, 1, use_bias=False)])
decoder_target = tf.placeholder(dtype='float32', shape=(None, None, None, None))
model.compile(optimizer='sgd', loss=masked_loss, target_tensors=[decoder_target])
other = keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Conv2D(1, 1, use_bias=False)])
other.compile('sgd', masked_loss, target_tensors=K.placeholder(ndim=4))
rng = np.random.RandomState(0)
x = rng.rand(2, 4, 4, 2).astype('float32')
y = np.concatenate([rng.rand(2, 4, 4, 1), rng.rand(2, 4, 4, 1) > 0.5, np.ones((2, 4, 4, 1))],
                   axis=-1).astype('float32')
loss = model.evaluate(x, y, verbose=0)
"""


def test_placeholders_only_given_to_target_tensors_go_and_the_loss_reads_fits_targets():
    namespace: dict = {}
    with pytest.raises(AttributeError):
        exec(_SCRIPT, namespace)  # noqa: S102  (TF 2 has no tf.placeholder)
    result = migrate.migrate_source(_SCRIPT)
    assert not result.report.flags, result.report.flags
    assert "target_tensors" not in result.migrated
    assert "placeholder" not in result.migrated
    assert [line for line, _ in changes(result, target_tensors.RULE)] == [13, 14, 16]
    exec(result.migrated, namespace)  # noqa: S102
    x, y = namespace["x"], namespace["y"]
    kernel = namespace["model"].get_weights()[0][0, 0, :, 0]
    prediction = x @ kernel
    mask = y[..., 1]
    expected = np.sum(((prediction - y[..., 0]) * mask) ** 2) / (mask.sum() + 1e-6)
    np.testing.assert_allclose(namespace["loss"], expected, rtol=1e-5)
    assert migrate.migrate_source(result.migrated).migrated == result.migrated


@pytest.mark.parametrize(
    "source",
    [
        "model.compile('sgd', 'mse', target_tensors=[queue_y])\n",
        # The placeholder is read elsewhere too: not only a declaration.
        "import tensorflow as tf\nt = tf.placeholder('float32')\n"
        "model.compile('sgd', 'mse', target_tensors=[t])\nfeed = {t: y}\n",
    ],
)
def test_target_tensors_holding_data_are_flagged(source):
    result = check_flag(source, "pass those targets to fit as y")
    assert flags(result, target_tensors.RULE)
    assert "target_tensors" in result.migrated


TARGETS_DECIDED_AT_RUN_TIME = """\
import numpy as np
from keras.layers import Input, Dense
from keras.models import Model

inputs = Input((3,))
model = Model(inputs, Dense(2, kernel_initializer='ones')(inputs))
model.compile(loss='mse', optimizer='sgd',
              target_tensors=None if not use_dataset_api else [targets])
loss = model.evaluate(np.ones((4, 3)), np.zeros((4, 2)), verbose=0)
"""


def test_target_tensors_none_at_run_time_compiles_and_tensors_raise_with_the_fix():
    """avolkov1's cifar10_cnn_mgpu.py: None unless its dataset-API path is chosen."""
    result = run(TARGETS_DECIDED_AT_RUN_TIME)
    assert "**parallel_keras.compat.target_tensors(" in result.migrated
    assert [flag.rule for flag in result.report.flags] == ["target tensors"]
    assert run(result.migrated).migrated == result.migrated
    namespace = {"use_dataset_api": False, "targets": None}
    exec(compile(result.migrated, "script.py", "exec"), namespace)  # noqa: S102
    assert namespace["loss"] == pytest.approx(9.0)  # (1+1+1)**2 per output
    with pytest.raises(ValueError, match="pass those targets to fit as y"):
        exec(  # noqa: S102
            compile(result.migrated, "script.py", "exec"),
            {"use_dataset_api": True, "targets": np.zeros((4, 2))},
        )


def test_target_tensors_none_is_removed():
    check_rewrite(
        "model.compile(loss='mse', optimizer='sgd', target_tensors=None)\n",
        "model.compile(loss='mse', optimizer='sgd')\n",
    )
