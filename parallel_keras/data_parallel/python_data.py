# SPDX-License-Identifier: Apache-2.0
"""Python generators and `PyDataset`s are read one batch per step.

A Python generator or a `keras.utils.PyDataset` (Keras 2's `Sequence`) runs
the user's code for each batch: counters, logs, a batch size changed in
`on_epoch_end`. Keras 3 turns it into a `tf.data` pipeline. tf.distribute's
iterator reads global batches ahead into every device's buffer: Keras 2's
upstream test saw a training generator read 11 times where one device
reads 7 (Keras 2 allowed 10), a validation `Sequence` 41 times against 22,
and a generator used for validation continued elsewhere in its stream each
epoch, so `val_loss` differed from one device's.

Here each step takes its global batch off a plain `tf.data` iterator over
the adapter's own pipeline (the generator, Keras's 2 batches peeked for the
element spec re-yielded as on one device), prepares it as
`batches.prepare_dataset` does and splits it across the replicas as
tf.distribute would. Nothing is read ahead: a batch is read when its step
runs, as Keras 2's `fit_generator(workers=0)` read it. One device's tf.data
prefetch holds one batch more, read at a moment that depends on timing
(before or after an `on_epoch_end`); where that matters the replicas follow
the step order. A `PyDataset` with `workers` keeps Keras's enqueuer, which
reads ahead on one device too. Arrays and `tf.data` datasets keep
tf.distribute's own prefetching pipeline; so do a strategy with replicas
on other workers and Keras 3.5-3.6, whose steps cannot take their batches
from Python (`epoch_iterator.steps_take_python_iterators`).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from parallel_keras._internals import epoch_iterator
from parallel_keras.cluster import prepared


def install() -> None:
    """Makes Keras's epoch iterators over Python data read one batch per step
    while a parallel_keras model runs (idempotent)."""
    # interception: TFEpochIterator.__init__ (class), at the first run of a
    # parallel_keras model's fit/evaluate/predict.
    epoch_iterator.read_python_data_per_step(_step_by_step_source)


def _step_by_step_source(iterator: Any) -> StepByStepDataset | None:
    strategy = epoch_iterator.epoch_iterator_strategy(iterator)
    prepare = prepared.preparation(strategy)
    if prepare is None or not epoch_iterator.is_python_data(iterator):
        return None
    if not epoch_iterator.steps_take_python_iterators():
        return None  # Keras 3.5-3.6: a Python iterator is read only when traced
    if strategy is None or len(strategy.extended.worker_devices) != strategy.num_replicas_in_sync:
        return None  # replicas on other workers read their own shards
    dataset = prepare(epoch_iterator.epoch_iterator_dataset(iterator))
    options = tf.data.Options()
    # tf.data would otherwise add a prefetch after the last (synchronous)
    # step of the pipeline, reading a batch ahead.
    options.experimental_optimization.inject_prefetch = False
    dataset = dataset.with_options(options)
    if not all(isinstance(spec, tf.TensorSpec) for spec in tf.nest.flatten(dataset.element_spec)):
        return None  # sparse, ragged or optional parts: split by tf.distribute
    steps = int(getattr(iterator, "steps_per_execution", 1) or 1)
    return StepByStepDataset(dataset, strategy, steps)


class StepByStepDataset:
    """A distributed dataset that reads its global batch when a step asks for it."""

    def __init__(
        self, dataset: tf.data.Dataset, strategy: tf.distribute.Strategy, steps_per_execution: int
    ):
        self._dataset = dataset
        self._strategy = strategy
        self._steps_per_execution = steps_per_execution

    @property
    def element_spec(self):
        """One replica's element spec (rows unknown)."""

        def per_replica(spec):
            if not spec.shape.rank:
                return spec
            return tf.TensorSpec([None, *spec.shape[1:]], spec.dtype, spec.name)

        return tf.nest.map_structure(per_replica, self._dataset.element_spec)

    def __iter__(self) -> _StepByStepIterator:
        return _StepByStepIterator(iter(self._dataset), self._strategy, self._steps_per_execution)


class _StepByStepIterator:
    """Keras's train and test functions take the steps of one execution from
    a Python iterator in a `zip` (Keras 3.7+): a `StopIteration` ends the
    execution after the steps it ran, as the multi-step loop stops at the
    data's end on one device; with no step run in it, the end is the
    `OutOfRangeError` a distributed iterator raises (a bare `StopIteration`
    would leave Keras's `zip` without outputs)."""

    def __init__(self, batches, strategy: tf.distribute.Strategy, steps_per_execution: int):
        self._batches = batches
        self._strategy = strategy
        self._steps_per_execution = steps_per_execution
        self._taken = 0
        self._ended = False

    def __iter__(self) -> _StepByStepIterator:
        return self

    def __next__(self):
        try:
            if self._ended:
                raise StopIteration
            batch = next(self._batches)
        except StopIteration:
            first_of_execution = self._taken % self._steps_per_execution == 0
            if self._ended or first_of_execution:
                raise tf.errors.OutOfRangeError(None, None, "End of sequence") from None
            self._ended = True
            raise
        self._taken += 1
        return split_across_replicas(batch, self._strategy)


def split_across_replicas(batch: Any, strategy: tf.distribute.Strategy) -> Any:
    """`batch` split as tf.distribute splits a global batch: replica r gets
    rows [r * c, (r + 1) * c), c = ceil(rows / replicas)."""
    num_replicas = strategy.num_replicas_in_sync
    rows = next((int(tensor.shape[0]) for tensor in tf.nest.flatten(batch) if tensor.shape.rank), 0)
    per_replica = -(-rows // num_replicas)

    def replica_values(context):
        start = context.replica_id_in_sync_group * per_replica

        def take(tensor):
            if not tensor.shape.rank:
                return tf.identity(tensor)
            return tf.identity(tensor[start : start + per_replica])

        return tf.nest.map_structure(take, batch)

    return strategy.experimental_distribute_values_from_function(replica_values)
