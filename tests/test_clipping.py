# SPDX-License-Identifier: Apache-2.0
"""Gradient clipping acts on the whole batch's gradient, as on one device.

Keras 2's parallel model merged the towers into one graph, so an optimizer's
`clipnorm`, `clipvalue` and `global_clipnorm` clipped the gradient of the
whole batch. Under tf.distribute, Keras clips each replica's share before the
replicas' gradients are summed; parallel_keras clips after the sum.
"""

import keras
import numpy as np
import pytest

import parallel_keras


def _linear(kernel):
    inputs = keras.Input((2,))
    outputs = keras.layers.Dense(
        1, use_bias=False, kernel_initializer=keras.initializers.Constant(kernel)
    )(inputs)
    return keras.Model(inputs, outputs)


def _product(y_true, y_pred):
    # d/dkernel of mean(y_pred * y_true) is the mean over rows of x * y_true.
    return keras.ops.mean(y_pred * y_true, axis=-1)


# Row gradients (-6, 0) and (0, 6) on one replica each: the batch's gradient
# is (-3, 3); each replica's share (1/2 of its row's) is (-3, 0) or (0, 3).
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], "float32")
Y = np.array([[-6.0], [6.0], [-6.0], [6.0]], "float32")


@pytest.mark.parametrize(
    "clipping, expected",
    [
        # The example: gradient (-3, 3), clipvalue=2 gives (3, -1) from (1, 1).
        ({"clipvalue": 2.0}, [3.0, -1.0]),
        ({"clipnorm": 1.0}, [1.0 + 0.5**0.5, 1.0 - 0.5**0.5]),
        ({"global_clipnorm": 1.0}, [1.0 + 0.5**0.5, 1.0 - 0.5**0.5]),
    ],
)
@pytest.mark.parametrize("cpu_relocation", [False, True])
def test_clipping_acts_on_the_summed_gradient(clipping, expected, cpu_relocation):
    reference = _linear(1.0)
    reference.compile(keras.optimizers.SGD(1.0, **clipping), _product)
    reference.train_on_batch(X, Y)
    np.testing.assert_allclose(reference.get_weights()[0].ravel(), expected, atol=1e-6)

    template = _linear(1.0)
    parallel = parallel_keras.multi_gpu_model(template, gpus=2, cpu_relocation=cpu_relocation)
    parallel.compile(keras.optimizers.SGD(1.0, **clipping), _product)
    parallel.train_on_batch(X, Y)
    np.testing.assert_allclose(template.get_weights()[0].ravel(), expected, atol=1e-6)
    # Adam clips the same summed gradient through fit too.
    reference.compile(keras.optimizers.Adam(0.1, **clipping), _product)
    parallel.compile(keras.optimizers.Adam(0.1, **clipping), _product)
    reference.fit(X, Y, batch_size=4, epochs=2, verbose=0)
    parallel.fit(X, Y, batch_size=4, epochs=2, verbose=0)
    np.testing.assert_allclose(template.get_weights()[0], reference.get_weights()[0], atol=1e-5)


def test_clipping_is_set_up_at_compile_not_while_a_step_is_traced():
    """The optimizer's clip moves after the all-reduce when the parallel model
    adopts it at `compile`; training then changes none of its methods."""
    parallel = parallel_keras.multi_gpu_model(_linear(1.0), gpus=2)
    optimizer = keras.optimizers.SGD(1.0, clipvalue=2.0)
    parallel.compile(optimizer, _product)
    names = ("_clip_gradients", "_all_reduce_sum_gradients")
    methods = {name: vars(optimizer).get(name) for name in names}
    assert all(callable(method) for method in methods.values())
    parallel.train_on_batch(X, Y)
    assert {name: vars(optimizer).get(name) for name in names} == methods
    np.testing.assert_allclose(parallel.template.get_weights()[0].ravel(), [3.0, -1.0], atol=1e-6)
