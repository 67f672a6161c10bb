# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.collectives` (TF 2.16 to 2.21).

Each fails loudly when an upgrade changes what TensorFlow's cross-device ops
look like to `_internals.collectives`, or when tensorflow/tensorflow#61314 is
fixed (so the fresh collective keys can go).
"""

import tensorflow as tf

from parallel_keras import _internals

_DEVICES = ["/cpu:0", "/cpu:1"]
_IMPLEMENTATION = tf.distribute.experimental.CommunicationImplementation


def _group_key(cross_device_ops, devices) -> int:
    """The collective group key `cross_device_ops` uses for `devices`."""
    return cross_device_ops._collective_keys.get_group_key(list(devices))


def test_upstream_collective_keys_still_collide_across_strategies():
    """tensorflow/tensorflow#61314; remove collective_all_reduce's fresh keys
    when this starts failing.

    The cause, read without running a collective (running one made this test
    depend on timing: under load it once passed where it should fail): two
    MirroredStrategies over different device groups both use group key 1, so
    TensorFlow's process-wide collective executor, which keeps the groups it
    has seen, meets the second group under the first one's key
    (InternalError in CollectiveReduceV2 at the first step).
    """
    four, two = ([f"/cpu:{i}" for i in range(n)] for n in (4, 2))
    first = tf.distribute.MirroredStrategy(four).extended._cross_device_ops
    second = tf.distribute.MirroredStrategy(two).extended._cross_device_ops
    assert _group_key(first, four) == _group_key(second, two)


def test_collective_all_reduce_gives_each_strategy_its_own_keys():
    four, two = ([f"/cpu:{i}" for i in range(n)] for n in (4, 2))
    first = _internals.collective_all_reduce(four)
    second = _internals.collective_all_reduce(two)
    assert _group_key(first, four) != _group_key(second, two)


def test_mirrored_strategy_keeps_its_cross_device_ops_in_extended():
    ops = tf.distribute.ReductionToOneDevice(reduce_to_device="/cpu:1")
    strategy = tf.distribute.MirroredStrategy(_DEVICES, cross_device_ops=ops)
    assert strategy.extended._cross_device_ops is ops


def test_cross_device_ops_kind_names_each_reduction():
    def kind(cross_device_ops):
        return _internals.cross_device_ops_kind(
            tf.distribute.MirroredStrategy(_DEVICES, cross_device_ops=cross_device_ops)
        )

    assert kind(tf.distribute.ReductionToOneDevice(reduce_to_device="/cpu:1")) == (
        "one_device",
        "/cpu:1",
    )
    assert kind(tf.distribute.ReductionToOneDevice()) == ("one_device", "/cpu:0")
    assert kind(tf.distribute.NcclAllReduce()) == ("nccl", None)
    assert kind(_internals.collective_all_reduce(_DEVICES)) == ("ring", None)
    nccl_collective = _internals.collective_all_reduce(_DEVICES, _IMPLEMENTATION.NCCL)
    assert nccl_collective._options.implementation == _IMPLEMENTATION.NCCL
    assert kind(nccl_collective) == ("nccl", None)


def test_nccl_kernels_registered_returns_a_bool():
    from tensorflow.python.framework import kernels

    registered = kernels.get_registered_kernels_for_op("NcclAllReduce")
    assert hasattr(registered, "kernel")
    result = _internals.nccl_kernels_registered()
    assert isinstance(result, bool)
    assert result == bool(registered.kernel)
