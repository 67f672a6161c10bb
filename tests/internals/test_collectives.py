"""Canaries for `parallel_keras._internals.collectives` (TF 2.21).

Each fails loudly when an upgrade changes what TensorFlow's cross-device ops
look like to `_internals.collectives`, or when tensorflow/tensorflow#61314 is
fixed (so the fresh collective keys can go).
"""

import tensorflow as tf

from parallel_keras import _internals, testing

_DEVICES = ["/cpu:0", "/cpu:1"]
_IMPLEMENTATION = tf.distribute.experimental.CommunicationImplementation


def test_upstream_collective_keys_still_collide_across_strategies():
    """tensorflow/tensorflow#61314; remove collective_all_reduce's fresh keys
    when this starts failing. Runs in its own process: the failure poisons
    the process's collective executor."""
    process = testing.run_python(
        """
        import parallel_keras
        parallel_keras.simulate_devices(4)
        import keras, numpy as np, tensorflow as tf
        x, y = np.ones((16, 2)), np.ones((16, 1))
        for n in (4, 2):
            strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])
            with strategy.scope():
                model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
                model.compile("sgd", "mse")
            try:
                model.fit(x, y, batch_size=8, verbose=0)
                print(n, "ok")
            except Exception as error:
                print(n, type(error).__name__)
        """,
    )
    assert process.stdout.split() == ["4", "ok", "2", "InternalError"]


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
        "one_device", "/cpu:1")
    assert kind(tf.distribute.ReductionToOneDevice()) == ("one_device", "/cpu:0")
    assert kind(tf.distribute.NcclAllReduce()) == ("nccl", None)
    assert kind(_internals.collective_all_reduce(_DEVICES)) == ("ring", None)
    nccl_collective = _internals.collective_all_reduce(_DEVICES, _IMPLEMENTATION.NCCL)
    assert nccl_collective._options.implementation == _IMPLEMENTATION.NCCL
    assert kind(nccl_collective) == ("nccl", None)


def test_nccl_kernels_registered_returns_a_bool():
    from tensorflow.python.framework import kernels  # pylint: disable=g-direct-tensorflow-import

    registered = kernels.get_registered_kernels_for_op("NcclAllReduce")
    assert hasattr(registered, "kernel")
    result = _internals.nccl_kernels_registered()
    assert isinstance(result, bool)
    assert result == bool(registered.kernel)
