# SPDX-License-Identifier: Apache-2.0
"""Gradient accumulation (`gradient_accumulation_steps`) through the parallel model.

Each test trains the parallel model with an optimizer given Keras 3's own
`gradient_accumulation_steps=k` and compares the weights (atol 1e-5) with
one device running the same optimizer (Keras's own accumulation, which works
without a strategy) and, where the batches allow, with one device running
batch k x B without accumulation.
"""

import keras
import numpy as np
import pytest
from helpers import assert_multi_step_error, conv_bn_model, images, keras_has_multi_step_at_data_end

import parallel_keras
from parallel_keras import _internals
from parallel_keras._internals import multi_step
from parallel_keras.data_parallel import accumulation

OPTIMIZERS = {
    "sgd_momentum": lambda **kw: keras.optimizers.SGD(0.1, momentum=0.9, **kw),
    "adam": lambda **kw: keras.optimizers.Adam(0.01, **kw),
    "rmsprop": lambda **kw: keras.optimizers.RMSprop(0.01, **kw),
    "adamw_clipnorm": lambda **kw: keras.optimizers.AdamW(
        0.01, weight_decay=0.1, clipnorm=0.05, **kw
    ),
    "sgd_global_clipnorm": lambda **kw: keras.optimizers.SGD(0.5, global_clipnorm=0.1, **kw),
}


def mlp(seed=2):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(7, activation="tanh"), keras.layers.Dense(2)]
    )


def vectors(rows=64):
    rng = np.random.RandomState(3)
    return rng.rand(rows, 5).astype("float32"), rng.rand(rows, 2).astype("float32")


def assert_same_weights(got, want, atol=1e-5):
    assert len(got.get_weights()) == len(want.get_weights())
    for a, b in zip(got.get_weights(), want.get_weights()):
        np.testing.assert_allclose(a, b, atol=atol)


def one_device(build, optimizer, x, y, batch_size, epochs, **fit_kwargs):
    model = build()
    model.compile(optimizer, "mse")
    model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0, **fit_kwargs)
    return model


def parallel_run(
    build, optimizer, x, y, batch_size, epochs, gpus=4, compile_kwargs=None, **fit_kwargs
):
    template = build()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(optimizer, "mse", **(compile_kwargs or {}))
    parallel.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0, **fit_kwargs)
    return template, parallel


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("gpus", [2, 4])
def test_accumulating_k_batches_trains_like_one_batch_k_times_larger(name, gpus):
    x, y = vectors(64)
    make = OPTIMIZERS[name]
    large_batch = one_device(mlp, make(), x, y, batch_size=32, epochs=2)
    template, parallel = parallel_run(
        mlp, make(gradient_accumulation_steps=2), x, y, batch_size=16, epochs=2, gpus=gpus
    )
    assert_same_weights(template, large_batch)
    # Keras's count on one device: `iterations` are updates, and the
    # private counter the batches.
    assert int(parallel.optimizer.iterations.numpy()) == 4
    assert int(large_batch.optimizer.iterations.numpy()) == 4


@pytest.mark.parametrize("steps_per_execution", [1, 3])
def test_epochs_that_are_not_a_multiple_of_k_behave_as_one_device(steps_per_execution):
    # 40 rows in batches of 8: 5 batches per epoch, k=3 straddles epochs.
    x, y = vectors(40)
    make = OPTIMIZERS["adam"]
    if steps_per_execution == 3 and not keras_has_multi_step_at_data_end():
        # Keras 3.5-3.6 run 3 steps per execution past an epoch of 5 batches.
        template = mlp()
        parallel = parallel_keras.multi_gpu_model(template, gpus=4)
        parallel.compile(make(gradient_accumulation_steps=3), "mse", steps_per_execution=3)
        with pytest.raises(multi_step.StepsPerExecutionNeedsNewerKeras) as raised:
            parallel.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
        assert_multi_step_error(str(raised.value), steps=3, batches=5)
        assert int(parallel.optimizer.iterations.numpy()) == 0
        return
    reference = mlp()
    reference.compile(
        make(gradient_accumulation_steps=3), "mse", steps_per_execution=steps_per_execution
    )
    reference.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    template, parallel = parallel_run(
        mlp,
        make(gradient_accumulation_steps=3),
        x,
        y,
        batch_size=8,
        epochs=3,
        compile_kwargs={"steps_per_execution": steps_per_execution},
    )
    assert_same_weights(template, reference)
    for variable, expected in zip(parallel.optimizer.variables, reference.optimizer.variables):
        np.testing.assert_allclose(variable.numpy(), expected.numpy(), atol=1e-5)
    assert int(parallel.optimizer.iterations.numpy()) == 15 // 3


def test_partial_last_batch_and_uneven_split_match_one_device():
    x, y = vectors(30)  # Batches of 12, 12, 6 on 4 replicas: 3/3/3/3, 2/2/1/1.
    make = OPTIMIZERS["sgd_momentum"]
    reference = one_device(mlp, make(gradient_accumulation_steps=2), x, y, 12, 2)
    template, _ = parallel_run(mlp, make(gradient_accumulation_steps=2), x, y, 12, 2)
    assert_same_weights(template, reference)


def two_outputs(seed=4):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((5,))
    hidden = keras.layers.Dense(6, activation="relu")(inputs)
    return keras.Model(
        inputs,
        {
            "a": keras.layers.Dense(2, name="a")(hidden),
            "b": keras.layers.Dense(1, name="b")(hidden),
        },
    )


@pytest.mark.parametrize("batch_loss", ["replica", "global"])
def test_sample_weights_and_per_output_losses(batch_loss):
    x, _ = vectors(48)
    rng = np.random.RandomState(5)
    y = {"a": rng.rand(48, 2).astype("float32"), "b": rng.rand(48, 1).astype("float32")}
    weights = rng.rand(48).astype("float32")
    compile_kwargs = {"loss": {"a": "mse", "b": "mae"}, "loss_weights": {"a": 1.0, "b": 0.5}}

    reference = two_outputs()
    reference.compile(OPTIMIZERS["adam"](gradient_accumulation_steps=2), **compile_kwargs)
    reference.fit(x, y, sample_weight=weights, batch_size=8, epochs=2, shuffle=False, verbose=0)

    template = two_outputs()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, batch_loss=batch_loss)
    parallel.compile(OPTIMIZERS["adam"](gradient_accumulation_steps=2), **compile_kwargs)
    parallel.fit(x, y, sample_weight=weights, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert parallel.batch_loss == batch_loss
    assert_same_weights(template, reference)


def test_mixed_float16_with_loss_scaling():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        x, y = vectors(32)

        def build():
            keras.utils.set_random_seed(5)
            inputs = keras.Input((5,))
            hidden = keras.layers.Dense(8, activation="relu")(inputs)
            return keras.Model(inputs, keras.layers.Dense(2, dtype="float32")(hidden))

        reference = one_device(
            build, keras.optimizers.SGD(0.1, gradient_accumulation_steps=2), x, y, 8, 2
        )
        template, parallel = parallel_run(
            build, keras.optimizers.SGD(0.1, gradient_accumulation_steps=2), x, y, 8, 2
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert isinstance(parallel.optimizer, keras.optimizers.LossScaleOptimizer)
    # 16-bit activations: see test_mixed_precision.py for the tolerance.
    assert_same_weights(template, reference, atol=1e-3)
    # The steps taken are the inner optimizer's: Keras 3.5's
    # LossScaleOptimizer.iterations is a counter of its own, never advanced
    # (one device too); later Keras forward it to the inner optimizer.
    assert (
        int(parallel.optimizer.inner_optimizer.iterations.numpy())
        == int(reference.optimizer.inner_optimizer.iterations.numpy())
        == 4
    )
    assert int(parallel.optimizer.iterations.numpy()) == int(reference.optimizer.iterations.numpy())
    np.testing.assert_allclose(
        parallel.optimizer.dynamic_scale.numpy(), reference.optimizer.dynamic_scale.numpy()
    )


def test_sync_batchnorm_matches_one_device_with_accumulation():
    x, y = images(48)
    make = OPTIMIZERS["adam"]
    reference = one_device(
        lambda: conv_bn_model(synchronized=True), make(gradient_accumulation_steps=2), x, y, 12, 1
    )
    template = conv_bn_model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, sync_batchnorm=True)
    parallel.compile(make(gradient_accumulation_steps=2), "mse")
    parallel.fit(x, y, batch_size=12, epochs=1, shuffle=False, verbose=0)
    assert_same_weights(template, reference)  # Moving statistics included.


def test_stateful_template_matches_one_device_with_accumulation():
    rng = np.random.RandomState(3)
    x = rng.rand(16, 3, 3).astype("float32")
    y = rng.rand(16, 1).astype("float32")

    def build(batch):
        keras.utils.set_random_seed(11)
        inputs = keras.Input(batch_shape=(batch, 3, 3))
        hidden = keras.layers.LSTM(4, stateful=True)(inputs)
        return keras.Model(inputs, keras.layers.Dense(1)(hidden))

    # Rows 0-1 of each batch continue rows 0-1 of the last: one device sees
    # the same sequences with a batch of 4 (2 replicas x 2 rows).
    reference = build(4)
    reference.compile(keras.optimizers.Adam(0.01, gradient_accumulation_steps=2), "mse")
    reference.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    template = build(2)
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(keras.optimizers.Adam(0.01, gradient_accumulation_steps=2), "mse")
    parallel.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert_same_weights(template, reference)


def test_template_keeps_training_like_one_device():
    x, y = vectors(32)
    make = OPTIMIZERS["rmsprop"]
    reference = one_device(mlp, make(gradient_accumulation_steps=2), x, y, 8, 1)
    reference.train_on_batch(x[:8], y[:8])
    template = mlp()
    parallel_keras.multi_gpu_model(template, gpus=4)
    template.compile(make(gradient_accumulation_steps=2), "mse")
    template.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    template.train_on_batch(x[:8], y[:8])
    assert_same_weights(template, reference)


def test_train_on_batch_accumulates():
    x, y = vectors(32)
    reference = mlp()
    reference.compile(OPTIMIZERS["adam"](), "mse")
    reference.train_on_batch(x, y)
    template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(OPTIMIZERS["adam"](gradient_accumulation_steps=2), "mse")
    before = [w.copy() for w in template.get_weights()]
    parallel.train_on_batch(x[:16], y[:16])
    for got, was in zip(template.get_weights(), before):  # Accumulated only.
        np.testing.assert_array_equal(got, was)
    parallel.train_on_batch(x[16:], y[16:])
    assert_same_weights(template, reference)


@pytest.mark.parametrize("steps", [0, -2, 2.5, "4", True])
def test_steps_that_are_not_a_positive_integer_are_refused(steps):
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.gradient_accumulation_steps = steps  # Past Keras's own check.
    with pytest.raises(
        ValueError,
        match=(
            r"gradient_accumulation_steps is the number of batches .* positive integer\. "
            r"Received: SGD\(gradient_accumulation_steps=.*\)\. Pass e\.g\."
        ),
    ):
        accumulation.accumulation_steps(optimizer)


def test_cpu_relocation_cannot_accumulate_and_says_so():
    x, y = vectors(16)
    template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2, cpu_relocation=True)
    before = [w.copy() for w in template.get_weights()]
    with pytest.raises(ValueError, match=r"Received: cpu_relocation=True .* Drop"):
        parallel.compile(OPTIMIZERS["adam"](gradient_accumulation_steps=2), "mse")
    assert not parallel.compiled
    # The template compiled by Keras itself is refused at its first step.
    template.compile(OPTIMIZERS["adam"](gradient_accumulation_steps=2), "mse")
    with pytest.raises(ValueError, match=r"Received: cpu_relocation=True .* Drop"):
        template.fit(x, y, batch_size=8, epochs=1, verbose=0)
    for got, was in zip(template.get_weights(), before):
        np.testing.assert_array_equal(got, was)


@pytest.mark.parametrize(
    "global_batch, per_replica, replicas, expected",
    [
        (256, 32, 8, (256, None)),
        (256, 32, 2, (64, 4)),
        (128, 32, 4, (128, None)),
        (128, 32, 2, (64, 2)),
        (96, 16, 3, (48, 2)),
    ],
)
def test_keep_global_batch(global_batch, per_replica, replicas, expected):
    assert accumulation.keep_global_batch(global_batch, per_replica, replicas) == expected


def test_keep_global_batch_reads_the_replicas_of_a_parallel_model():
    parallel = parallel_keras.multi_gpu_model(mlp(), gpus=2)
    assert accumulation.keep_global_batch(128, 32, parallel) == (64, 2)


def test_keep_global_batch_that_does_not_divide_says_what_would():
    with pytest.raises(
        ValueError,
        match=(
            r"Received: global_batch=128, 3 replicas x per_replica_batch=32 = 96 rows\. "
            r"Run on 1, 2, 4 replica\(s\)"
        ),
    ):
        accumulation.keep_global_batch(128, 32, 3)


def test_mixed_float16_skips_a_non_finite_batch_as_one_device():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        x, y = vectors(32)
        y[8:16] = 1e4  # Batch 1 overflows float16 under the loss scale.

        def build():
            keras.utils.set_random_seed(5)
            inputs = keras.Input((5,))
            hidden = keras.layers.Dense(8, activation="relu")(inputs)
            return keras.Model(inputs, keras.layers.Dense(2, dtype="float32")(hidden))

        reference = one_device(
            build, keras.optimizers.SGD(0.01, gradient_accumulation_steps=2), x, y, 8, 1
        )
        template, parallel = parallel_run(
            build, keras.optimizers.SGD(0.01, gradient_accumulation_steps=2), x, y, 8, 1
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")
    # The overflowing batch is neither counted nor accumulated; the scale halves.
    assert float(reference.optimizer.dynamic_scale.numpy()) < 32768.0
    np.testing.assert_allclose(
        parallel.optimizer.dynamic_scale.numpy(), reference.optimizer.dynamic_scale.numpy()
    )
    counted = [
        _internals.micro_step_counter(model.optimizer.inner_optimizer).numpy()
        for model in (parallel, reference)
    ]
    assert int(counted[0]) == int(counted[1]) == 3  # 4 batches, one skipped.
    assert_same_weights(template, reference, atol=1e-3)
