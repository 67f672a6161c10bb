# SPDX-License-Identifier: Apache-2.0
"""The tf.distribute strategies behind `multi_gpu_model`, and their reduction.

Keras 2's `multi_gpu_model` built one tower per GPU and concatenated the
towers' outputs; `cpu_merge` chose where that concatenation ran (`/cpu:0`,
or the first GPU). Its gradients were whatever TensorFlow 1 derived through
the towers. Here the options map to:

| option               | strategy                  | gradient reduction          |
|----------------------|---------------------------|-----------------------------|
| (default)            | MirroredStrategy          | chosen for the devices, see |
|                      | (weights on each replica) | `choose_gradient_reduction` |
| cpu_relocation=True  | CentralStorageStrategy    | on `/cpu:0`, where the      |
|                      | (weights on `/cpu:0`)     | weights live                |

`cpu_merge` keeps its legacy meaning: where the replicas' outputs are
concatenated (`predict`), `/cpu:0` or the first replica's device.

One strategy is kept per (devices, options), so re-running a notebook cell
reuses it instead of creating a new one each time.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import keras
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import captured_strategy
from parallel_keras.cluster import prepared
from parallel_keras.cluster import strategy as cluster_strategy

_CACHE: dict[tuple, tf.distribute.Strategy] = {}
_LOCK = threading.Lock()

# On simulated CPU devices, reducing through `/cpu:0` measured faster than a
# ring all-reduce among the replicas for every model of the benchmark suite
# (`python -m benchmarks cpu-reduction`, results in the README).
CPU_REDUCTION = "one_device"


@dataclasses.dataclass(frozen=True)
class GradientReduction:
    """How gradients are combined across replicas.

    Attributes:
        kind: `"nccl"` (NVIDIA NCCL all-reduce), `"ring"` (collective ring
            all-reduce), `"one_device"` (reduced on `device`, then
            broadcast), or `"central_storage"` (the variables live on
            `device`, which applies the update).
        device: The device for `"one_device"` and `"central_storage"`.
    """

    kind: str
    device: str | None = None

    def __str__(self) -> str:
        names = {
            "nccl": "NCCL all-reduce",
            "ring": "ring all-reduce",
            "one_device": f"reduce on {self.device}",
            "central_storage": f"central storage on {self.device}",
        }
        return names[self.kind]


def choose_gradient_reduction(
    replica_devices: Sequence[str],
    cpu_relocation: bool = False,
    physical_gpus: int = 0,
    logical_gpus: int = 0,
    nccl_available: bool = False,
) -> GradientReduction:
    """The reduction for `replica_devices`, as `MirroredStrategy` picks it on GPUs.

    On GPUs this follows TensorFlow's own choice
    (`MirroredExtended._make_collective_ops_with_fallbacks`, TF 2.21): NCCL
    when every device is a physical GPU (and TensorFlow was built with NCCL),
    a ring all-reduce among virtual GPUs (NCCL cannot run several logical
    devices of one GPU), reduction to one device when CPUs and GPUs mix. On
    CPU devices it is `CPU_REDUCTION`, the faster one measured here.

    Args:
        replica_devices: Device names, one per replica.
        cpu_relocation: The variables live on `/cpu:0`. Defaults to False.
        physical_gpus: Physical GPUs on this machine. Defaults to 0.
        logical_gpus: Logical GPUs on this machine. Defaults to 0.
        nccl_available: TensorFlow has NCCL kernels. Defaults to False.

    Returns:
        A `GradientReduction`.
    """
    if cpu_relocation:
        return GradientReduction("central_storage", "/cpu:0")
    types = {tf.DeviceSpec.from_string(device).device_type for device in replica_devices}
    if types == {"GPU"}:
        if logical_gpus > physical_gpus or not nccl_available:
            return GradientReduction("ring")
        return GradientReduction("nccl")
    if "GPU" in types:
        return GradientReduction("one_device", "/cpu:0")
    if CPU_REDUCTION == "ring":
        return GradientReduction("ring")
    return GradientReduction("one_device", "/cpu:0")


def gradient_reduction_for(
    replica_devices: Sequence[str], cpu_relocation: bool = False
) -> GradientReduction:
    """`choose_gradient_reduction` with this machine's devices."""
    return choose_gradient_reduction(
        replica_devices,
        cpu_relocation=cpu_relocation,
        physical_gpus=len(tf.config.list_physical_devices("GPU")),
        logical_gpus=len(tf.config.list_logical_devices("GPU")),
        nccl_available=_internals.nccl_kernels_registered(),
    )


def replication_strategy(
    replica_devices: Sequence[str], cpu_relocation: bool = False
) -> tf.distribute.Strategy:
    """Returns the (cached) strategy replicating over `replica_devices`.

    Args:
        replica_devices: Fully qualified device names, one per replica.
        cpu_relocation: Keep the variables on the CPU, computing on the
            replicas. Defaults to False.

    Returns:
        A `tf.distribute.Strategy` with one replica per device.
    """
    # Multi-worker: a TF_CONFIG cluster replicates on every worker.
    multi_worker = cluster_strategy.multi_worker_strategy_or_none(replica_devices)
    if multi_worker is not None:
        return multi_worker
    reduction = gradient_reduction_for(replica_devices, cpu_relocation)
    key = (tuple(replica_devices), reduction)
    with _LOCK:
        strategy = _CACHE.get(key)
        if strategy is None:
            strategy = _build(list(replica_devices), reduction)
            _CACHE[key] = strategy
        return strategy


def _build(devices: list[str], reduction: GradientReduction):
    if reduction.kind == "central_storage":
        return prepared.PreparedCentralStorageStrategy(
            compute_devices=devices, parameter_device=reduction.device
        )
    if reduction.kind == "one_device":
        cross_device_ops = tf.distribute.ReductionToOneDevice(reduce_to_device=reduction.device)
    else:
        implementation = (
            tf.distribute.experimental.CommunicationImplementation.NCCL
            if reduction.kind == "nccl"
            else tf.distribute.experimental.CommunicationImplementation.RING
        )
        cross_device_ops = _internals.collective_all_reduce(devices, implementation)
    return prepared.PreparedMirroredStrategy(devices=devices, cross_device_ops=cross_device_ops)


def strategy_reduction(strategy: tf.distribute.Strategy) -> GradientReduction:
    """The `GradientReduction` a strategy built here (or by TF) performs."""
    if isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy):
        return GradientReduction("central_storage", "/cpu:0")
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return GradientReduction("ring")
    kind, device = _internals.cross_device_ops_kind(strategy)
    return GradientReduction(kind, device)


def describe(strategy: tf.distribute.Strategy) -> str:
    """A short human-readable name for a strategy, for logs and reprs."""
    return f"{type(strategy).__name__}(replicas={strategy.num_replicas_in_sync})"


def adopt_optimizer(
    optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy
) -> None:
    """Moves an optimizer (and any state it has) into `strategy`.

    An optimizer built before wrapping (a template trained, or resumed with
    its optimizer, before `multi_gpu_model`) keeps its state: its slots
    (e.g. Adam's moments) and `iterations` stay with the same variables,
    which relocation gave new values (see `_internals.optimizers`).
    """
    _internals.rekey_optimizer_variables(optimizer)
    if captured_strategy.optimizer_strategy(optimizer) is strategy:
        return
    _internals.relocate_variables(optimizer.variables, strategy)
    captured_strategy.set_optimizer_strategy(optimizer, strategy)
