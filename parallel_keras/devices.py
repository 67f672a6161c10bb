# SPDX-License-Identifier: Apache-2.0
"""Devices: simulated devices and the rule that maps GPU ids onto them.

Everything in parallel_keras names devices the way legacy scripts did
(`gpus=4`, `'/gpu:1'`). On a machine with GPUs those names mean what they say.
On a machine without GPUs, `simulate_devices(n)` splits the host CPU into `n`
logical devices, and GPU id `i` then maps to simulated CPU device `i`, so a
script written for a multi-GPU box rehearses on a laptop with the same
structure. `multi_gpu_model` and `parallel_keras.device` share this one rule.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import tensorflow as tf
from absl import logging

_LOGGED: set[str] = set()
_LOG_LOCK = threading.Lock()


def _log_once(message: str) -> None:
    with _LOG_LOCK:
        if message in _LOGGED:
            return
        _LOGGED.add(message)
    logging.info(message)


def simulate_devices(n: int, device_type: str = "CPU", memory_limit_mb: int = 1024) -> list[str]:
    """Splits the host CPU (or GPU 0) into `n` logical devices.

    TensorFlow fixes its devices the first time it uses them, so this must run
    before anything else touches TensorFlow devices (first line of a script,
    first cell of a notebook, a pytest `conftest.py`).

    Args:
        n: Number of logical devices to create, >= 1.
        device_type: `"CPU"` to split the first CPU, `"GPU"` to split the
            first GPU. Defaults to `"CPU"`.
        memory_limit_mb: Memory limit of each logical GPU, in MiB. Ignored for
            CPU. Defaults to 1024.

    Returns:
        The names of the logical devices of that type, e.g.
        `['/device:CPU:0', '/device:CPU:1']`.

    Raises:
        ValueError: If `n` is not a positive integer, `device_type` is
            neither CPU nor GPU, or the machine has no device of that type.
        RuntimeError: If TensorFlow already initialized its devices with a
            different configuration.

    Example:

    >>> import parallel_keras
    >>> parallel_keras.simulate_devices(4)  # doctest: +SKIP
    ['/device:CPU:0', '/device:CPU:1', '/device:CPU:2', '/device:CPU:3']
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(
            "simulate_devices needs a positive integer number of devices. "
            f"Received: n={n!r}. Pass e.g. n=4."
        )
    device_type = str(device_type).upper()
    if device_type not in ("CPU", "GPU"):
        raise ValueError(
            "simulate_devices can split a CPU or a GPU. "
            f"Received: device_type={device_type!r}. Use 'CPU' or 'GPU'."
        )
    if device_type == "CPU":
        cluster_names = _simulate_on_cluster_worker(n)
        if cluster_names is not None:
            return cluster_names
    physical = tf.config.list_physical_devices(device_type)
    if not physical:
        raise ValueError(
            f"simulate_devices(device_type={device_type!r}) needs a physical "
            f"{device_type}, and this machine has none. Use device_type='CPU'."
        )
    if device_type == "GPU":
        config = [
            tf.config.LogicalDeviceConfiguration(memory_limit=memory_limit_mb) for _ in range(n)
        ]
    else:
        config = [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
    try:
        tf.config.set_logical_device_configuration(physical[0], config)
    except RuntimeError as error:
        existing = _local_devices(device_type)
        if len(existing) == n:
            return existing
        raise RuntimeError(
            "simulate_devices must be called before TensorFlow initializes "
            f"its devices. Received: n={n}, but this process already has "
            f"{len(existing)} logical {device_type} device(s): "
            f"{existing}. Call "
            "parallel_keras.simulate_devices(n) first, before building any "
            "model or tensor (in a notebook, restart the kernel)."
        ) from error
    names = [device.name for device in tf.config.list_logical_devices(device_type)]
    _log_once(f"parallel_keras: simulating {n} logical {device_type} devices.")
    return names


def _simulate_on_cluster_worker(n: int) -> list[str] | None:
    """`simulate_devices(n)` on a cluster worker (see `cluster.strategy`)."""
    from parallel_keras.cluster import strategy as cluster

    if not cluster.simulate_on_worker(n):
        return None
    return _local_devices("CPU")


def _local_devices(device_type: str) -> list[str]:
    """This process's logical devices of one type.

    In a multi-worker cluster TensorFlow lists every worker's devices; only
    this worker's own (its job and task) are local.
    """
    from parallel_keras.cluster import strategy as cluster

    names = [device.name for device in tf.config.list_logical_devices(device_type)]
    strategy = cluster.current_strategy()
    if strategy is None:
        return names
    local = tf.DeviceSpec.from_string(strategy.extended.worker_devices[0])
    return [
        name
        for name in names
        if (spec := tf.DeviceSpec.from_string(name)).job == local.job and spec.task == local.task
    ]


def _is_multi_worker() -> bool:
    from parallel_keras.cluster import membership
    from parallel_keras.cluster import strategy as cluster

    return cluster.current_strategy() is not None or membership.is_multi_worker()


def gpus_are_simulated() -> bool:
    """True when there is no GPU and GPU ids map to simulated CPU devices."""
    return not _local_devices("GPU") and len(_local_devices("CPU")) > 1


def available_devices() -> list[str]:
    """Every logical device of this process, as short lowercase names."""
    # A logical device's name always has a device type, so none is skipped.
    return [
        short
        for device in tf.config.list_logical_devices()
        if (short := short_device_name(device.name)) is not None
    ]


def short_device_name(name: str | None) -> str | None:
    """`'/job:localhost/.../device:CPU:1'` -> `'/cpu:1'`; no device type -> None."""
    if not name:
        return None
    spec = tf.DeviceSpec.from_string(name)
    if spec.device_type is None:
        return None
    return f"/{spec.device_type.lower()}:{spec.device_index or 0}"


def _full_name(device_type: str, index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:{device_type.upper()}:{index}"


class _MissingDeviceError(ValueError):
    """A well-formed device name this machine does not have."""


def resolve_device(name: str) -> str:
    """Maps a device name written for GPUs onto this machine's devices.

    `'/gpu:i'` stays GPU i where GPUs exist, and becomes simulated CPU device
    `i` where there is no GPU but `simulate_devices` made logical CPUs.

    Args:
        name: A device string such as `'/gpu:1'`, `'/device:GPU:1'` or
            `'/cpu:0'`.

    Returns:
        The fully qualified local device name,
        e.g. `'/job:localhost/replica:0/task:0/device:CPU:1'`.

    Raises:
        TypeError: If `name` is not a string.
        ValueError: If `name` is malformed or names a device that does not
            exist; the message lists the devices that do.
    """
    if not isinstance(name, str):
        example = (
            f"'/gpu:{name}'" if isinstance(name, int) and not isinstance(name, bool) else "'/gpu:0'"
        )
        raise TypeError(
            "A device must be a string such as '/gpu:0'. Received: "
            f"{name!r} of type {type(name).__name__}. Pass {example}."
        )
    try:
        spec = tf.DeviceSpec.from_string(name)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"Malformed device string. Received: {name!r}. Use the form "
            "'/gpu:0', '/device:GPU:0' or '/cpu:0'."
        ) from error
    if spec.device_type is None:
        raise ValueError(
            f"A device string must name a device type. Received: {name!r}. "
            "Use the form '/gpu:0' or '/cpu:0'."
        )
    if (
        spec.job not in (None, "localhost")
        or spec.replica not in (None, 0)
        or (spec.task not in (None, 0))
    ):
        # tf.device would quietly drop the job/task in a single process;
        # another process's device cannot hold this process's layers.
        local = f"/{spec.device_type.lower()}:{spec.device_index or 0}"
        raise ValueError(
            "A device here is one of this process's devices; a job, replica "
            f"or task names another process. Received: {name!r}. Use "
            f"{local!r}; to train on several machines, run the script with "
            "`parallel-keras launch`, which places each worker's replicas."
        )
    if spec.device_index is not None and spec.device_index < 0:
        raise ValueError(
            f"Device indices count from 0. Received: {name!r}. Use an index "
            f">= 0, e.g. '/{spec.device_type.lower()}:0'."
        )
    device_type = spec.device_type.upper()
    index = spec.device_index or 0
    if device_type == "GPU" and gpus_are_simulated():
        _log_once(
            "parallel_keras: no GPU on this machine; GPU ids map to the "
            "simulated CPU devices made by simulate_devices()."
        )
        device_type = "CPU"
    present = len(_local_devices(device_type))
    if index >= present:
        raise _MissingDeviceError(
            f"Device {name!r} does not exist on this machine. Available "
            f"devices: {available_devices()}. Use one of those, or rehearse on "
            "CPU: run the script with PARALLEL_KERAS_SIMULATE_DEVICES=n, or call "
            "parallel_keras.simulate_devices(n) first."
        )
    return _full_name(device_type, index)


def _gpus_fix(gpus) -> str:
    if isinstance(gpus, str) and gpus.strip().isdigit():
        return f"Pass gpus={int(gpus)} (an int, not a string)."
    if isinstance(gpus, float) and gpus.is_integer():
        return f"Pass gpus={int(gpus)}."
    if isinstance(gpus, str):
        return f"Pass gpus=[{gpus!r}] for one device string, or gpus=2."
    return "Pass e.g. gpus=2 or gpus=[0, 1]."


def _check_device_string(entry: str, gpus) -> None:
    """A malformed name in `gpus` is a typo, not a missing device."""
    try:
        spec = tf.DeviceSpec.from_string(entry)
    except (ValueError, TypeError):
        spec = None
    if spec is None or spec.device_type is None:
        raise ValueError(
            f"Each device string in `gpus` must be a device name such as "
            f"'/gpu:0'. Received: gpus={list(gpus)!r}, whose entry {entry!r} "
            "is malformed. Use GPU ids such as [0, 1], or names such as "
            "['/gpu:0', '/gpu:1']."
        )


def replica_devices(gpus: int | Sequence[int] | Sequence[str] | None) -> list[str]:
    """The devices `multi_gpu_model(model, gpus)` replicates on.

    Follows the legacy `keras.utils.multi_gpu_model` rules for `gpus`, with
    GPU ids mapped onto simulated CPU devices when the machine has no GPU.

    Args:
        gpus: `None` for every GPU, an int >= 2, a list of GPU ids, or a list
            of device strings.

    Returns:
        Fully qualified device names, one per replica.

    Raises:
        TypeError: If `gpus` has the wrong type.
        ValueError: If `gpus` asks for fewer than 2 devices, has duplicates or
            negative ids, or names devices this machine does not have.
    """
    simulated = gpus_are_simulated()
    physical_gpus = len(_local_devices("GPU"))
    usable = physical_gpus or (len(_local_devices("CPU")) if simulated else 0)
    # In a multi-worker cluster `gpus` counts each worker's own devices, and
    # one per worker is enough: the replicas are spread over the workers.
    minimum = 1 if _is_multi_worker() else 2
    no_devices_hint = (
        " This machine has no GPU: to rehearse on n simulated CPU devices, run "
        "the script unmodified with PARALLEL_KERAS_SIMULATE_DEVICES=n (e.g. "
        "PARALLEL_KERAS_SIMULATE_DEVICES=2 python train.py), or call "
        "parallel_keras.simulate_devices(n) first."
        if not physical_gpus and not simulated
        else ""
    )
    if gpus is None:
        if minimum == 1 and usable == 0:
            usable = 1  # One CPU replica on this worker.
        if usable < minimum:
            raise ValueError(
                "multi_gpu_model with gpus=None replicates on every GPU and "
                "needs at least 2. Received: gpus=None, and this machine has "
                f"{physical_gpus} GPU(s).{no_devices_hint}"
            )
        gpus = usable
    if isinstance(gpus, bool) or not isinstance(gpus, (int, list, tuple)):
        raise TypeError(
            "multi_gpu_model's `gpus` must be an int >= 2, a list of GPU ids "
            f"or a list of device strings. Received: gpus={gpus!r} of type "
            f"{type(gpus).__name__}. {_gpus_fix(gpus)}"
        )
    if isinstance(gpus, int):
        if gpus < minimum:
            raise ValueError(
                "For multi-gpu usage to be effective, call `multi_gpu_model` "
                f"with `gpus >= 2`. Received: `gpus={gpus}`. To train on one "
                "device, use the template model directly." + (no_devices_hint if gpus == 0 else "")
            )
        requested = [f"/gpu:{i}" for i in range(gpus)]
    else:
        if len(gpus) < minimum:
            raise ValueError(
                "For multi-gpu usage to be effective, call `multi_gpu_model` "
                f"with `len(gpus) >= 2`. Received: `gpus={list(gpus)}`. To "
                "train on one device, use the template model directly."
            )
        requested = []
        for entry in gpus:
            if isinstance(entry, bool) or not isinstance(entry, (int, str)):
                raise TypeError(
                    "Each entry of `gpus` must be a GPU id (int) or a device "
                    f"string. Received: gpus={list(gpus)!r}, whose entry "
                    f"{entry!r} is a {type(entry).__name__}. Use ids such as "
                    "[0, 1] or names such as ['/gpu:0', '/gpu:1']."
                )
            if isinstance(entry, str):
                _check_device_string(entry, gpus)
            if isinstance(entry, int):
                if entry < 0:
                    raise ValueError(
                        "GPU ids must be >= 0. Received: "
                        f"gpus={list(gpus)}. Use ids such as [0, 1]."
                    )
                requested.append(f"/gpu:{entry}")
            else:
                requested.append(entry)
    if minimum == 1:
        # The cluster strategy replicates on every device fixed at each
        # worker's start-up; these are this worker's.
        return _local_devices("GPU") or _local_devices("CPU")
    resolved = []
    for name in requested:
        try:
            resolved.append(resolve_device(name))
        except _MissingDeviceError as error:
            expected = ["/cpu:0"] + requested
            raise ValueError(
                f"To call `multi_gpu_model` with `gpus={gpus}`, we expect the "
                f"following devices to be available: {expected}. However this "
                f"machine only has: {available_devices()}. Try reducing "
                f"`gpus`.{no_devices_hint or ' Or list only devices that exist.'}"
            ) from error
    if len(set(resolved)) != len(resolved):
        raise ValueError(
            "Each replica needs its own device, but `gpus` names one device "
            f"more than once. Received: gpus={gpus!r}. Remove the duplicates."
        )
    return resolved
