# SPDX-License-Identifier: Apache-2.0
"""devices: simulated devices and the GPU-id rule shared by every entry point."""

import pytest
import tensorflow as tf

import parallel_keras
from parallel_keras import devices, testing


def test_simulate_devices_is_a_no_op_when_already_in_place():
    names = parallel_keras.simulate_devices(4)
    assert names == [f"/device:CPU:{i}" for i in range(4)]


def test_simulate_devices_too_late_says_to_call_it_first():
    with pytest.raises(
        RuntimeError,
        match=r"must be called before TensorFlow.*Received: n=2.*already has 4 logical CPU",
    ):
        parallel_keras.simulate_devices(2)
    assert len(tf.config.list_logical_devices("CPU")) == 4


@pytest.mark.parametrize("n", [0, -1, 2.5, "4", True])
def test_simulate_devices_rejects_bad_counts(n):
    with pytest.raises(ValueError, match="positive integer"):
        parallel_keras.simulate_devices(n)


@pytest.mark.subprocess
def test_simulate_devices_in_a_fresh_process():
    process = testing.run_python(
        """
        import parallel_keras, tensorflow as tf
        print(parallel_keras.simulate_devices(3))
        try:
            parallel_keras.simulate_devices(2, device_type="GPU")
        except ValueError as error:
            print("GPU:", error)
        print(len(tf.config.list_logical_devices("CPU")))
        """
    )
    lines = process.stdout.strip().splitlines()
    assert lines[0] == "['/device:CPU:0', '/device:CPU:1', '/device:CPU:2']"
    assert "needs a physical GPU" in lines[1]
    assert lines[2] == "3"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("/gpu:2", "/job:localhost/replica:0/task:0/device:CPU:2"),
        ("/device:GPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"),
        ("/cpu:3", "/job:localhost/replica:0/task:0/device:CPU:3"),
        ("/CPU:1", "/job:localhost/replica:0/task:0/device:CPU:1"),
    ],
)
def test_gpu_ids_map_to_simulated_cpus(name, expected):
    assert devices.gpus_are_simulated()
    assert devices.resolve_device(name) == expected


@pytest.mark.parametrize(
    "name, error, message",
    [
        (
            "/gpu:4",
            ValueError,
            r"does not exist.*Available devices: \['/cpu:0', '/cpu:1', '/cpu:2', '/cpu:3'\]",
        ),
        ("/cpu:9", ValueError, "does not exist"),
        ("gpu zero", ValueError, "Malformed device string"),
        ("/job:worker", ValueError, "must name a device type"),
        (3, TypeError, "must be a string"),
    ],
)
def test_bad_device_names(name, error, message):
    with pytest.raises(error, match=message):
        devices.resolve_device(name)
