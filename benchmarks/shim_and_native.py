# SPDX-License-Identifier: Apache-2.0
"""One suite model built twice: through `multi_gpu_model`, and natively.

The native side is what a user would write by hand: the model built inside
a `MirroredStrategy` scope over the same simulated devices, with the
reduction the shim picks on CPU devices (`ReductionToOneDevice` on
`/cpu:0`), so whatever differs between the two is the shim's own doing
(`python -m benchmarks cpu-reduction` compares reductions).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ShimAndNative(NamedTuple):
    shim: Any
    """`multi_gpu_model(template, gpus=replicas)`, compiled."""
    natives: list[Any]
    """`native_copies` models built in one `MirroredStrategy` scope, compiled."""
    dataset: Any
    """Endless synthetic global batches of the benchmark's size."""


def build(
    model_name: str, replicas: int, global_batch_size: int, native_copies: int = 1
) -> ShimAndNative:
    """The suite model `model_name` at its quick input size, both ways.

    Every model starts from the same weights (seed 0) and is compiled with
    SGD with momentum and sparse categorical cross-entropy, without XLA.
    """
    import keras
    import tensorflow as tf

    import parallel_keras
    from benchmarks.suite import datasets, models

    input_spec = models.default_input(model_name, quick=True)
    build_kwargs = {}
    if models.MODELS[model_name].stateful:
        build_kwargs["batch_per_replica"] = global_batch_size // replicas

    def compiled(model):
        model.compile(
            keras.optimizers.SGD(0.01, momentum=0.9),
            "sparse_categorical_crossentropy",
            jit_compile=False,
        )
        return model

    def build_model():
        keras.utils.set_random_seed(0)
        return models.build(model_name, input_spec, **build_kwargs)

    shim = compiled(parallel_keras.multi_gpu_model(build_model(), gpus=replicas))
    strategy = tf.distribute.MirroredStrategy(
        [f"/cpu:{i}" for i in range(replicas)],
        cross_device_ops=tf.distribute.ReductionToOneDevice("/cpu:0"),
    )
    with strategy.scope():
        natives = [compiled(build_model()) for _ in range(native_copies)]
    dataset = datasets.make_dataset(
        model_name, datasets.parse("synthetic"), input_spec, global_batch_size
    )
    return ShimAndNative(shim, natives, dataset)
