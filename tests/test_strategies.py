"""Gradient reduction chosen per device type (selection logic, no GPU needed)."""

import pytest

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
        ([GPUS[0], CPUS[1]], dict(physical_gpus=1, logical_gpus=1, nccl_available=True), "one_device"),
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
