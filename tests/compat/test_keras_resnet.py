# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.compat.keras_resnet: keras-resnet 0.2.0's models build and compute on Keras 3.

The reference is keras-resnet itself on Keras 2: a child process runs it
on `tf_keras` (Keras 2.x's code, bound to the name `keras`), saves its
weights in Keras 2's HDF5 layout and its outputs; the Keras 3 model built
through the compatibility path loads that file by name and must give the
same outputs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

if importlib.util.find_spec("keras_resnet") is None or importlib.util.find_spec("tf_keras") is None:
    pytest.skip("needs keras-resnet 0.2.0 and tf_keras", allow_module_level=True)

pytestmark = pytest.mark.subprocess

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_KERAS2 = """
import sys, numpy as np, tf_keras
sys.modules["keras"] = tf_keras  # keras-resnet 0.2.0 on Keras 2
import keras_resnet.models
tf_keras.utils.set_random_seed(3)
inputs = tf_keras.Input((32, 32, 3))
model = keras_resnet.models.ResNet18(inputs, include_top=False, freeze_bn=True)
for layer in model.layers:  # non-trivial statistics, so inference mode shows
    if type(layer).__name__ == "BatchNormalization":
        mean, var = layer.moving_mean, layer.moving_variance
        mean.assign(np.linspace(-0.2, 0.2, mean.shape[0]))
        var.assign(np.linspace(0.5, 1.5, var.shape[0]))
x = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("float32")
model.save_weights(sys.argv[1] + "/resnet18.h5")
outputs = model.predict(x, verbose=0)
np.savez(sys.argv[1] + "/keras2.npz", x=x, *outputs,
         names=np.array([layer.name for layer in model.layers]),
         trainable=np.array([w.name.split(":")[0] for w in model.trainable_weights]))
"""


def _keras2_reference(tmp_path) -> dict:
    env = dict(os.environ, PYTHONPATH=_ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", _KERAS2, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(tmp_path / "keras2.npz"))


def test_plain_keras_resnet_fails_on_keras3():
    code = (
        "import keras, keras_resnet.models\n"
        "keras_resnet.models.ResNet18(keras.Input((32, 32, 3)), include_top=False)\n"
    )
    env = dict(os.environ, PYTHONPATH=_ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0 and "TypeError" in done.stderr


@pytest.mark.slow  # a child process on tf_keras, then the Keras 3 model
def test_resnet_through_the_compat_path_is_keras2s_model_names_weights_and_outputs(tmp_path):
    import keras

    import parallel_keras.compat.keras_resnet.models as models
    from parallel_keras import compat

    reference = _keras2_reference(tmp_path)
    model = models.ResNet18(keras.Input((32, 32, 3)), include_top=False, freeze_bn=True)
    assert [layer.name for layer in model.layers][1:] == list(reference["names"])[1:]
    loaded = compat.load_weights(model, str(tmp_path / "resnet18.h5"), by_name=True)
    assert len(loaded) == sum(1 for layer in model.layers if layer.weights)
    outputs = model.predict(reference["x"], verbose=0)
    assert len(outputs) == 4
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(output, reference[f"arr_{index}"], rtol=1e-4, atol=1e-4)
    # freeze_bn: BatchNormalization is not trained and runs in inference mode.
    frozen = [layer for layer in model.layers if type(layer).__name__ == "BatchNormalization"]
    assert frozen and not any(layer.trainable for layer in frozen)
    training = model(reference["x"], training=True)
    np.testing.assert_allclose(training[0], outputs[0], rtol=1e-4, atol=1e-4)
    trainable = {w.path.split("/")[0] for w in model.trainable_weights}
    assert trainable == {name.split("/")[0] for name in reference["trainable"]}
