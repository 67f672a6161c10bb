# SPDX-License-Identifier: Apache-2.0
"""A Keras 2 loss closing over the model's mask Input, migrated and run.

The partial-convolution inpainting idiom: `compile(loss=loss_total(inputs_mask))`
where the loss reads the mask Input's batch values. Keras 2's graph fed the
mask with the batch; the migrated code must give the same losses and weights
as that computation written out by hand, on one device and on 4 replicas.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import compat, migrate
from tests.compat.helpers import migrated, run

MASKED_LOSS = """\
from keras.layers import Input, Dense, Concatenate
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import multi_gpu_model
import keras.backend as K


def loss_total(mask):
    def loss(y_true, y_pred):
        y_comp = mask * y_true + (1 - mask) * y_pred
        hole = K.mean(K.abs((1 - mask) * (y_true - y_pred)), axis=-1)
        return hole + K.mean(K.square(y_comp), axis=-1)
    return loss


image = Input((6,), name='inputs_img')
mask = Input((6,), name='inputs_mask')
outputs = Dense(6)(Concatenate()([image, mask]))
model = Model([image, mask], outputs)
initial = model.get_weights()
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer=SGD(lr=0.1), loss=loss_total(mask))
history = parallel.fit([x, m], y, batch_size=16, epochs=2, shuffle=False, verbose=0)
evaluated = parallel.evaluate([x, m], y, batch_size=16, verbose=0)
"""


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype("float32")
    m = (rng.random((32, 6)) > 0.5).astype("float32")
    y = rng.normal(size=(32, 6)).astype("float32")
    return x, m, y


def _keras2_by_hand(initial, x, m, y, epochs=2, batch_size=16, lr=0.1):
    """Keras 2's step written out: the loss reads the batch's own mask rows."""
    kernel, bias = (tf.Variable(w) for w in initial)

    def loss(rows):
        features = tf.concat([x[rows], m[rows]], axis=-1)
        y_pred = tf.matmul(features, kernel) + bias
        mask, y_true = m[rows], y[rows]
        y_comp = mask * y_true + (1 - mask) * y_pred
        hole = tf.reduce_mean(tf.abs((1 - mask) * (y_true - y_pred)), axis=-1)
        return tf.reduce_mean(hole + tf.reduce_mean(tf.square(y_comp), axis=-1))

    epoch_losses = []
    for _ in range(epochs):
        batch_losses = []
        for start in range(0, len(x), batch_size):
            rows = slice(start, start + batch_size)
            with tf.GradientTape() as tape:
                value = loss(rows)
            for variable, gradient in zip((kernel, bias), tape.gradient(value, (kernel, bias))):
                variable.assign_sub(lr * gradient)
            batch_losses.append(float(value))
        epoch_losses.append(np.mean(batch_losses))
    evaluated = np.mean([float(loss(slice(s, s + batch_size))) for s in range(0, len(x), 16)])
    return [kernel.numpy(), bias.numpy()], epoch_losses, evaluated


def test_migrate_wraps_a_loss_made_over_a_variable():
    result = migrated(MASKED_LOSS)
    assert "loss=parallel_keras.compat.closure_loss(parallel, loss_total(mask))" in result.migrated
    again = migrate.migrate_source(result.migrated, "script.py")
    assert again.migrated == result.migrated


@pytest.mark.parametrize(
    "loss",
    ["'mse'", "focal_loss(gamma=2.0)", "keras.losses.Huber(delta)", "custom_loss"],
)
def test_migrate_leaves_losses_not_made_over_a_variable(loss):
    source = f"import keras\nmodel.compile(optimizer='sgd', loss={loss})\n"
    assert "closure_loss" not in migrate.migrate_source(source, "script.py").migrated


@pytest.mark.parametrize("gpus", [1, 4])
def test_loss_over_the_mask_input_gives_keras2_numbers(gpus):
    x, m, y = _data()
    namespace = run(migrated(MASKED_LOSS), gpus=gpus, x=x, m=m, y=y)
    weights, epoch_losses, evaluated = _keras2_by_hand(namespace["initial"], x, m, y)
    for got, want in zip(namespace["model"].get_weights(), weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(namespace["history"].history["loss"], epoch_losses, rtol=1e-5)
    np.testing.assert_allclose(namespace["evaluated"], evaluated, rtol=1e-5)
    # The model's inference signature is unchanged: the image and the mask in, one output.
    assert [t.name for t in namespace["model"].inputs] == ["inputs_img", "inputs_mask"]
    assert namespace["model"].predict([x, m], verbose=0).shape == (32, 6)


def test_loss_over_a_layer_output_reads_its_batch_values():
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(3, kernel_initializer="ones", use_bias=False)(inputs)
    outputs = keras.layers.Dense(2, kernel_initializer="zeros", use_bias=False)(hidden)
    model = keras.Model(inputs, outputs)

    def make_loss(features):
        def loss(y_true, y_pred):
            return keras.ops.mean(features, axis=-1) + 0.0 * keras.ops.mean(y_pred, axis=-1)

        return loss

    model.compile(optimizer="sgd", loss=compat.closure_loss(model, make_loss(hidden)))
    x = np.arange(12, dtype="float32").reshape(4, 3)
    evaluated = model.evaluate(x, np.zeros((4, 2)), batch_size=4, verbose=0)
    np.testing.assert_allclose(evaluated, np.mean(x.sum(axis=1)), rtol=1e-6)


def test_a_loss_closing_over_no_tensor_is_returned_as_it_is():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    scale = 2.0

    def loss(y_true, y_pred):
        return scale * keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)

    assert compat.closure_loss(model, loss) is loss
    assert "compute_loss" not in vars(model)


def test_a_tensor_of_another_model_is_refused_with_the_fix():
    other = keras.Input((3,), name="other_mask")
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))

    def loss(y_true, y_pred):
        return keras.ops.mean(other * y_pred, axis=-1)

    with pytest.raises(ValueError, match="other_mask"):
        compat.closure_loss(model, loss)
