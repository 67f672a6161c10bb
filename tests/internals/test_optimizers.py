# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.optimizers` (TF 2.21 / Keras 3.15).

They fail loudly when an upgrade changes the optimizer internals that
gradient accumulation on replicas relies on, when Keras's own accumulation
starts working under a strategy (keras-team/keras#20582), so
`data_parallel/accumulation.py` could go back to `apply_gradients`, or when
it changes how an optimizer finds the variables it was built for.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import optimizers


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])


def test_keras_accumulation_still_fails_under_a_strategy():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = _model()
        model.compile(keras.optimizers.SGD(0.1, gradient_accumulation_steps=2), "mse")
    x = np.ones((8, 3), "float32")
    with pytest.raises(RuntimeError, match="merge_call` called while defining a new graph"):
        model.fit(x, x[:, :2], batch_size=4, epochs=1, verbose=0)


def test_accumulation_internals_keras_counts_batches_and_updates():
    model = _model()
    optimizer = keras.optimizers.AdamW(
        0.1, weight_decay=0.5, clipnorm=1.0, gradient_accumulation_steps=2, use_ema=True
    )
    model.compile(optimizer, "mse")
    x = np.ones((8, 3), "float32")
    model.fit(x, x[:, :2], batch_size=4, epochs=1, verbose=0)
    assert int(_internals.micro_step_counter(optimizer).numpy()) == 2
    assert int(optimizer.iterations.numpy()) == 1
    accumulators = _internals.gradient_accumulators(optimizer, model.trainable_variables)
    assert [tuple(a.shape) for a in accumulators] == [(3, 2), (2,)]
    assert all(not np.any(a.numpy()) for a in accumulators)  # Reset by the update.
    grads = [tf.ones((3, 2)) * 10, tf.ones((2,))]
    clipped = _internals.clip_gradients(optimizer, grads)
    np.testing.assert_allclose(np.linalg.norm(clipped[0].numpy()), 1.0, rtol=1e-6)
    kept, variables = _internals.filter_empty_gradients(
        optimizer, [None, grads[1]], model.trainable_variables
    )
    assert len(kept) == len(variables) == 1
    before = model.trainable_variables[0].numpy()
    _internals.apply_weight_decay_here(optimizer, model.trainable_variables[:1])
    assert not np.allclose(model.trainable_variables[0].numpy(), before)
    _internals.update_moving_average_here(optimizer)
    _internals.overwrite_with_moving_average_here(optimizer)
    assert not _internals.overwrites_with_gradient(optimizer, model.trainable_variables[0])
    assert _internals.gradient_accumulators(keras.optimizers.SGD(), []) is None


def test_relocated_variables_are_unknown_until_the_optimizer_is_rekeyed():
    variable = keras.Variable(np.ones(2, "float32"))
    optimizer = keras.optimizers.Adam(0.1)
    optimizer.build([variable])
    optimizer.apply_gradients([(tf.ones(2), variable)])
    momentum = [v.numpy() for v in optimizer.variables]
    assert _internals.optimizer_built_variables(optimizer) == [variable]
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _internals.relocate_variables([variable], strategy)
    with pytest.raises(ValueError, match="Unknown variable"):
        optimizer.apply_gradients([(tf.ones(2), variable)])
    _internals.rekey_optimizer_variables(optimizer)
    assert list(_internals.optimizer_variable_keys(optimizer).values()) == [0]
    for before, after in zip(momentum, optimizer.variables):
        np.testing.assert_array_equal(before, after.numpy())


def test_keras_clips_before_the_optimizers_all_reduce():
    """`_clip_gradients` and `_all_reduce_sum_gradients` still exist on the TF
    optimizer; `clip_after_all_reduce` moves the clip after the sum."""
    optimizer = keras.optimizers.SGD(1.0, clipvalue=2.0)
    assert callable(optimizer._clip_gradients) and callable(optimizer._all_reduce_sum_gradients)
    optimizers.clip_after_all_reduce(optimizer)
    variable = keras.Variable([1.0, 1.0])
    optimizer.apply_gradients([(tf.constant([-3.0, 3.0]), variable)])
    np.testing.assert_allclose(variable.numpy(), [3.0, -1.0])


@pytest.mark.parametrize(
    "name, slots",
    [
        ("RMSprop", "velocities"),
        ("Adagrad", "accumulators"),
        ("Nadam", "momentums"),
        ("Nadam", "velocities"),
    ],
)
def test_keras_optimizers_keep_their_slots_where_keras2_formulas_read_them(name, slots):
    # compat.keras2_optimizer's update steps read Keras 3's slot lists by
    # variable index (keras/src/optimizers/rmsprop.py, adagrad.py, nadam.py).
    model = _model()
    optimizer = getattr(keras.optimizers, name)()
    optimizer.build(model.trainable_variables)
    for index, variable in enumerate(model.trainable_variables):
        assert optimizers.variable_index(optimizer, variable) == index
        slot = optimizers.optimizer_slot(optimizer, slots, variable)
        assert tuple(slot.shape) == tuple(variable.shape)
        assert any(slot is owned for owned in optimizer.variables)
