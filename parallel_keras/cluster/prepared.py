# SPDX-License-Identifier: Apache-2.0
"""tf.distribute strategies that prepare the batches Keras distributes.

Keras hands each global batch to `strategy.experimental_distribute_dataset`
(TFEpochIterator, Keras 3.15). These strategies apply the preparation that
the model running the batches passed in (`preparing_batches(strategy,
prepare)`, with `Execution.prepare` over `data_parallel/batches.py`: no
replica ever gets an empty slice), and only while that model runs them: a
user's own call distributes as usual. They sit low, beside the cluster
state, because both one-machine and multi-worker replication build them.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator

import tensorflow as tf

Preparation = Callable[[tf.data.Dataset], tf.data.Dataset]

# The preparations passed in for each strategy, innermost last: a template's
# `predict` inside a callback of its parallel model's `fit` runs on the same
# strategy with its own preparation, and the outer one comes back after it.
_PREPARATIONS: weakref.WeakKeyDictionary[object, list[Preparation]] = weakref.WeakKeyDictionary()


# interception: the datasets a strategy distributes go through the running
# model's preparation, while that model's fit/evaluate/predict/*_on_batch runs.
@contextlib.contextmanager
def preparing_batches(strategy: tf.distribute.Strategy, prepare: Preparation) -> Iterator[None]:
    """Within the block, datasets `strategy` distributes go through `prepare`."""
    stack = _PREPARATIONS.setdefault(strategy, [])
    stack.append(prepare)
    try:
        yield
    finally:
        stack.pop()


def preparation(strategy: tf.distribute.Strategy | None) -> Preparation | None:
    """The preparation of the model running on `strategy` now, or None."""
    stack = _PREPARATIONS.get(strategy) if strategy is not None else None
    return stack[-1] if stack else None


class _PreparesBatches:
    def experimental_distribute_dataset(self, dataset, options=None):
        prepare = preparation(self)
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
