# SPDX-License-Identifier: Apache-2.0
"""tf.distribute strategies that prepare the batches Keras distributes.

Keras hands each global batch to `strategy.experimental_distribute_dataset`
(TFEpochIterator, Keras 3.15). These strategies apply the preparation that
the model running the batches asked for (`data_parallel/batches.py`: no
replica ever gets an empty slice), and only while that model runs them: a
user's own call distributes as usual. They sit low, beside the cluster
state, because both one-machine and multi-worker replication build them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

import tensorflow as tf

_PREPARATION: contextvars.ContextVar[Callable | None] = contextvars.ContextVar(
    "parallel_keras_batch_preparation", default=None
)


@contextlib.contextmanager
def preparing_batches(
    prepare: Callable[[tf.data.Dataset], tf.data.Dataset],
) -> Iterator[None]:
    """Within the block, datasets distributed by the strategies below go through `prepare`."""
    token = _PREPARATION.set(prepare)
    try:
        yield
    finally:
        _PREPARATION.reset(token)


def current_preparation() -> Callable[[tf.data.Dataset], tf.data.Dataset] | None:
    """The preparation of the model running now, or None outside its methods."""
    return _PREPARATION.get()


class _PreparesBatches:
    def experimental_distribute_dataset(self, dataset, options=None):
        prepare = _PREPARATION.get()
        if prepare is not None and isinstance(dataset, tf.data.Dataset):
            dataset = prepare(dataset)
        # A mixin: the tf.distribute strategy follows it in each class's MRO.
        return super().experimental_distribute_dataset(dataset, options)  # type: ignore[misc]


class PreparedMirroredStrategy(_PreparesBatches, tf.distribute.MirroredStrategy):
    """`MirroredStrategy` whose datasets are prepared for the running model."""


class PreparedCentralStorageStrategy(
    _PreparesBatches, tf.distribute.experimental.CentralStorageStrategy
):
    """`CentralStorageStrategy` whose datasets are prepared for the running model."""


class PreparedMultiWorkerMirroredStrategy(
    _PreparesBatches, tf.distribute.MultiWorkerMirroredStrategy
):
    """`MultiWorkerMirroredStrategy` whose datasets are prepared for the running model."""
