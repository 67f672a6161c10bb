# SPDX-License-Identifier: Apache-2.0
"""`multi_gpu_model` changes the template in one place, and can undo it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras


def _model():
    keras.utils.set_random_seed(4)
    inputs = keras.Input((5,))
    hidden = keras.layers.Dense(6, activation="relu")(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    return keras.Model(inputs, keras.layers.Dense(2)(hidden), name="plain")


def _data():
    rng = np.random.RandomState(5)
    return rng.rand(24, 5).astype("float32"), rng.rand(24, 2).astype("float32")


def _optimizer():
    return keras.optimizers.Adam(0.05, clipnorm=0.5)


def test_an_undone_adoption_trains_and_saves_as_a_plain_keras_model(tmp_path):
    x, y = _data()
    twin = _model()
    twin.compile(_optimizer(), "mse")
    twin.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)

    template = _model()
    template.compile(_optimizer(), "mse")
    template.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    methods = set(vars(template))
    parallel = parallel_keras.multi_gpu_model(template, gpus=2, sync_batchnorm=True)
    parallel.compile(template.optimizer, "mse")  # adopted: its clip moves
    assert {"fit", "train_step"} <= set(vars(template))
    parallel._adoption.undo()

    assert set(vars(template)) == methods
    assert template.distribute_strategy is twin.distribute_strategy
    assert not any(layer.synchronized for layer in template.layers[2:3])
    for variable in [*template.variables, *template.optimizer.variables]:
        value = variable.value
        assert not isinstance(value, tf.distribute.DistributedValues), variable.path
    assert "_all_reduce_sum_gradients" not in vars(template.optimizer)
    with pytest.raises(RuntimeError, match="no longer owns its template"):
        parallel.fit(x, y, verbose=0)
    # Trains on, and saves, exactly as the never-adopted twin.
    twin.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    template.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(template.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    twin.save(tmp_path / "twin.keras")
    template.save(tmp_path / "template.keras")
    reloaded = keras.saving.load_model(tmp_path / "template.keras")
    assert type(reloaded) is type(keras.saving.load_model(tmp_path / "twin.keras"))
    np.testing.assert_allclose(
        reloaded.predict(x, verbose=0), twin.predict(x, verbose=0), atol=1e-6
    )


def _replica_masks(parallel):
    """Each replica's dropout mask on a batch of ones, as its step draws it."""
    strategy = parallel.strategy
    rows = np.ones((4, 16), "float32")
    batch = next(iter(strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors(rows))))
    masks = strategy.experimental_local_results(
        tf.function(
            lambda batch: strategy.run(
                lambda rows: parallel.template(rows, training=True) != 0, args=(batch,)
            )
        )(batch)
    )
    return {np.asarray(mask)[0].tobytes() for mask in masks}


def test_layers_random_streams_are_adopted_once_and_undone():
    """Dropout's seed generator draws per replica from `multi_gpu_model` on,
    a Dropout added to the template later from its next run; `undo` gives
    both back as Keras made them."""
    keras.utils.set_random_seed(2)
    template = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(16), keras.layers.Dropout(0.5)]
    )
    generator = template.layers[1].seed_generator
    kind_before = (generator.state.aggregation, _replica_aggregation(generator.state))
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    assert "next" in vars(generator)  # at adoption, before any run
    assert len(_replica_masks(parallel)) == 2

    template.add(keras.layers.Dropout(0.5))
    added = template.layers[2].seed_generator
    parallel.compile(keras.optimizers.SGD(0.0), "mse")
    rows = np.ones((4, 16), "float32")
    parallel.fit(rows, rows, batch_size=4, verbose=0)
    assert "next" in vars(added)  # adopted at the run after it was added
    assert len(_replica_masks(parallel)) == 2

    parallel._adoption.undo()
    for seeds in (generator, added):
        assert "next" not in vars(seeds)
        assert (seeds.state.aggregation, _replica_aggregation(seeds.state)) == kind_before
        assert not isinstance(seeds.state.value, tf.distribute.DistributedValues)
    # One device again: the template draws as a never-adopted twin at the same state.
    twin = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16), keras.layers.Dropout(0.5)])
    twin.add(keras.layers.Dropout(0.5))
    twin.set_weights(template.get_weights())
    for mine, theirs in zip(template.layers[1:], twin.layers[1:]):
        theirs.seed_generator.state.assign(mine.seed_generator.state.value)
    np.testing.assert_array_equal(
        template(rows, training=True).numpy(), twin(rows, training=True).numpy()
    )


def _replica_aggregation(variable):
    from parallel_keras import _internals

    return _internals.replica_aggregation(variable)


def test_a_frozen_batchnorm_is_keras3s_on_the_template_between_parallel_steps():
    """The parallel model trains a frozen BatchNormalization as Keras 2 did
    (batch statistics) only for the length of each train call: used directly,
    the template runs it as Keras 3 (moving statistics), trains and saves the
    flags as the user set them."""
    template = _model()
    batchnorm = template.layers[2]
    batchnorm.trainable = False
    batchnorm.momentum = 0.9
    template.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = _data()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    moving_before = batchnorm.moving_mean.numpy()
    parallel.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_array_equal(batchnorm.moving_mean.numpy(), moving_before)

    assert (batchnorm.trainable, batchnorm.momentum) == (False, 0.9)
    assert batchnorm.get_config()["trainable"] is False
    assert len(template.trainable_weights) == 4  # the two Dense layers only
    twin = _model()
    twin.layers[2].trainable = False
    twin.set_weights(template.get_weights())
    np.testing.assert_allclose(
        template(x, training=True).numpy(), twin(x, training=True).numpy(), atol=1e-6
    )
