# SPDX-License-Identifier: Apache-2.0
"""Gradient reduction chosen per device type (selection logic, no GPU needed),
and the CPU-relocation strategy training like one device."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras
from parallel_keras.cluster import prepared
from parallel_keras.data_parallel import strategies

GPUS = [f"/job:localhost/replica:0/task:0/device:GPU:{index}" for index in range(4)]
CPUS = [f"/job:localhost/replica:0/task:0/device:CPU:{index}" for index in range(4)]


@pytest.mark.parametrize(
    "devices, machine, expected",
    [
        # What MirroredStrategy picks itself (TF 2.21
        # _make_collective_ops_with_fallbacks): NCCL among physical GPUs...
        (GPUS, dict(physical_gpus=4, logical_gpus=4, nccl_available=True), "nccl"),
        (GPUS[:2], dict(physical_gpus=8, logical_gpus=8, nccl_available=True), "nccl"),
        # ...a ring among logical GPUs split from fewer physical ones...
        (GPUS, dict(physical_gpus=1, logical_gpus=4, nccl_available=True), "ring"),
        # ...a ring where TensorFlow has no NCCL kernels...
        (GPUS, dict(physical_gpus=4, logical_gpus=4, nccl_available=False), "ring"),
        # ...and reduction to one device when CPUs and GPUs mix.
        (
            [GPUS[0], CPUS[1]],
            dict(physical_gpus=1, logical_gpus=1, nccl_available=True),
            "one_device",
        ),
        # CPU devices: the reduction measured fastest here.
        (CPUS, dict(), strategies.CPU_REDUCTION),
        (["/cpu:0", "/cpu:1"], dict(), strategies.CPU_REDUCTION),
        (["/gpu:0", "/gpu:1"], dict(physical_gpus=2, logical_gpus=2, nccl_available=True), "nccl"),
    ],
)
def test_reduction_follows_the_devices(devices, machine, expected):
    assert strategies.choose_gradient_reduction(devices, **machine).kind == expected


def test_cpu_relocation_reduces_where_the_variables_live():
    reduction = strategies.choose_gradient_reduction(
        GPUS, cpu_relocation=True, physical_gpus=4, logical_gpus=4, nccl_available=True
    )
    assert (reduction.kind, reduction.device) == ("central_storage", "/cpu:0")
    assert str(reduction) == "central storage on /cpu:0"


@pytest.mark.parametrize("kind", ["nccl", "ring", "one_device"])
def test_each_reduction_builds_a_strategy_that_reports_it(kind):
    devices = ["/cpu:0", "/cpu:1"]
    reduction = strategies.GradientReduction(kind, "/cpu:0" if kind == "one_device" else None)
    strategy = strategies._build(devices, reduction)
    assert strategies.strategy_reduction(strategy) == reduction


# --- cpu_relocation=True (CentralStorageStrategy) trains like one device ------


def _absolute_error(y_true, y_pred):
    return keras.ops.mean(keras.ops.abs(y_true - y_pred), axis=-1)


def _squared_error(y_true, y_pred):
    return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)


class _Rows(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return (len(self.x) + self.batch_size - 1) // self.batch_size

    def __getitem__(self, index):
        rows = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[rows], self.y[rows]


def _cycle(x, y, batch_size):
    while True:
        for start in range(0, len(x), batch_size):
            yield x[start : start + batch_size], y[start : start + batch_size]


@pytest.mark.parametrize(
    "inputs, loss, metric",
    [
        ("arrays", "mse", "mae"),  # batches of 8: equal static slices
        ("arrays_of_6", "mse", "mae"),  # 6 rows on 4 replicas: tiled, keep mask
        ("arrays", _squared_error, _absolute_error),  # batch_loss="global"
        ("generator", "mse", _absolute_error),
        ("pydataset", "mse", "mae"),
    ],
)
def test_cpu_relocation_trains_and_logs_like_one_device(inputs, loss, metric):
    """Every input kind and loss kind: weights and every epoch's logs."""
    rng = np.random.RandomState(0)
    x = rng.rand(24, 5).astype("float32")
    y = x.sum(axis=1, keepdims=True)

    def data():
        if inputs == "generator":
            return {"x": _cycle(x, y, 8), "steps_per_epoch": 3}
        if inputs == "pydataset":
            return {"x": _Rows(x, y, 8)}
        return {"x": x, "y": y, "batch_size": 6 if inputs == "arrays_of_6" else 8}

    def model():
        keras.utils.set_random_seed(1)
        return keras.Sequential(
            [keras.Input((5,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
        )

    reference = model()
    reference.compile(keras.optimizers.SGD(0.05), loss, metrics=[metric])
    # One epoch for streamed inputs: see test_parallel_model's PyDataset test.
    epochs = 2 if inputs.startswith("arrays") else 1
    expected = reference.fit(**data(), epochs=epochs, shuffle=False, verbose=0).history
    template = model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, cpu_relocation=True)
    parallel.compile(keras.optimizers.SGD(0.05), loss, metrics=[metric])
    history = parallel.fit(**data(), epochs=epochs, shuffle=False, verbose=0).history

    for got, want in zip(template.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert sorted(history) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-5, err_msg=name)


@pytest.mark.parametrize("batch_size", [8, 10])  # 10 rows on 4 replicas: 3/3/3/1
def test_cpu_relocation_logs_each_outputs_loss_like_one_device(batch_size):
    x = np.random.RandomState(0).rand(30, 5).astype("float32")
    y = [x.sum(axis=1, keepdims=True), x[:, :2]]

    def model():
        keras.utils.set_random_seed(1)
        inputs = keras.Input((5,))
        hidden = keras.layers.Dense(4, activation="tanh")(inputs)
        return keras.Model(
            inputs,
            [keras.layers.Dense(1, name="a")(hidden), keras.layers.Dense(2, name="b")(hidden)],
        )

    histories = []
    for relocated in (False, True):
        template = model()
        network = (
            parallel_keras.multi_gpu_model(template, gpus=4, cpu_relocation=True)
            if relocated
            else template
        )
        network.compile(keras.optimizers.SGD(0.05), ["mse", "mae"], metrics=[["mae"], []])
        histories.append(
            network.fit(x, y, batch_size=batch_size, epochs=2, shuffle=False, verbose=0).history
        )
    expected, history = histories
    assert sorted(history) == sorted(expected) == ["a_loss", "a_mae", "b_loss", "loss"]
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-5, err_msg=name)


def test_a_strategy_prepares_only_while_its_model_hands_it_a_preparation():
    """The preparation is passed to the strategy the model runs on: another
    strategy, and the same one outside the block, distribute as usual."""
    running = prepared.PreparedMirroredStrategy(["/cpu:0", "/cpu:1"])
    other = prepared.PreparedMirroredStrategy(["/cpu:0", "/cpu:1"])
    dataset = tf.data.Dataset.from_tensors(tf.ones([4, 1]))

    def doubled(data):
        return data.map(lambda x: x * 2.0)

    def first_value(strategy):
        batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
        return float(strategy.experimental_local_results(batch)[0][0, 0])

    with prepared.preparing_batches(running, doubled):
        assert prepared.preparation(running) is doubled
        assert first_value(running) == 2.0
        assert first_value(other) == 1.0
        with prepared.preparing_batches(running, lambda data: data):
            assert first_value(running) == 1.0
        assert first_value(running) == 2.0
    assert prepared.preparation(running) is None
    assert first_value(running) == 1.0
