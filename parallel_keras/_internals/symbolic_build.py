# SPDX-License-Identifier: Apache-2.0
"""The first-batch symbolic build under a strategy.

Upstream surface: Keras 3 `TensorFlowTrainer._maybe_symbolic_build` and
`Trainer._symbolic_build` (backend/tensorflow/trainer.py,
trainers/trainer.py). Works around Keras's `_maybe_symbolic_build` reducing
the first distributed batch across replicas (keras-team/keras#20585,
tensorflow/tensorflow#72388). Read in the Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3
and 3.15.1 sources. `tests/internals/test_symbolic_build.py` fails when the
defect is fixed upstream (so the workaround can go).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from parallel_keras._internals import interceptions, multi_step, variables

# --- First-batch symbolic build under a strategy --------------------------
#
# `TensorFlowTrainer._maybe_symbolic_build` (Keras 3.15) reduces the first
# distributed batch with `strategy.reduce("MEAN", batch, axis=None)` only to
# learn its shapes. With a batch that does not split evenly across replicas
# (e.g. 16 rows on 3 replicas: 6/5/5) the reduction fails with
# "Inputs to operation AddN ... must have the same size and shape", and under
# MultiWorkerMirroredStrategy it fails converting PerReplica to a Tensor
# (keras-team/keras#20585, tensorflow/tensorflow#72388). Using the first local
# replica's values gives the same shapes (all that is used) without any
# cross-replica op.


def symbolic_build_from_local_replica(
    model: keras.Model,
    iterator: object | None = None,
    data_batch: object | None = None,
    select: Callable[[object], object] = lambda batch: batch,
) -> None:
    """Builds `model`'s compile state from one replica's batch shapes.

    Replaces `model._maybe_symbolic_build` for a model whose
    `_distribute_strategy` is set. With `iterator` (Keras's TFEpochIterator)
    the shapes come from its distributed dataset's element spec
    (`_distributed_dataset`, and a `PerReplicaSpec`'s `_value_specs`): no
    batch is read, where Keras's own method reads one and abandons the
    iteration, which with a `PyDataset` sometimes reorders the epoch's
    batches (seen on TF 2.21 / Keras 3.15, native MirroredStrategy too).
    `select` picks Keras's `(x, y, sample_weight)` out of the local batch.
    """
    strategy = model._distribute_strategy
    if iterator is not None:
        multi_step.require_multi_step_support(iterator)
        data_batch = _local_element_spec(iterator)
    data_batch = tf.nest.map_structure(
        lambda value: (
            strategy.experimental_local_results(value)[0]
            if isinstance(value, tf.distribute.DistributedValues)
            else value
        ),
        data_batch,
    )
    with strategy.scope():
        model._symbolic_build(data_batch=select(data_batch))
    # The metrics now exist (compiled ones are built just above). Before
    # Keras 3.10 Keras created their "sum" counters wrong under a strategy
    # (see `variables._INITIALIZE_SHAPES`): 3.5-3.6 without an aggregation,
    # each replica counting into its own copy; 3.7-3.9 on-write SUM, adding
    # the old total once per replica. Relocated, they count per replica and
    # sum on read. Skipped from Keras 3.10, which creates them so.
    if not variables.creates_metric_counters_per_replica():
        variables.relocate_variables(
            [variable for metric in model.metrics for variable in metric.variables], strategy
        )


def _local_element_spec(iterator):
    """One replica's element spec of a TFEpochIterator's distributed dataset."""
    dataset = getattr(iterator, "_distributed_dataset", None)
    spec = getattr(dataset, "element_spec", None)
    if spec is None:
        raise ValueError(
            "Training and evaluation need data with a known structure. "
            f"Received: {type(dataset).__name__} without an element spec. "
            "Pass NumPy arrays, a tf.data.Dataset or a keras.utils.PyDataset."
        )

    def local(leaf):
        value_specs = getattr(leaf, "_value_specs", None)
        return value_specs[0] if value_specs else leaf

    return tf.nest.map_structure(local, spec, expand_composites=False)


def install_symbolic_build(model: keras.Model, select: Callable[[object], object]) -> None:
    """Makes `model` (an instance) build its compile state from one replica."""

    def maybe_symbolic_build(iterator=None, data_batch=None):
        symbolic_build_from_local_replica(model, iterator, data_batch, select)

    # On the instance, past Keras's attribute tracking: the class (and so
    # the saved config) stays the user's.
    model.__dict__["_maybe_symbolic_build"] = maybe_symbolic_build


def remove_symbolic_build(model: keras.Model) -> None:
    """Undoes `install_symbolic_build`."""
    model.__dict__.pop("_maybe_symbolic_build", None)


def install_class_symbolic_build(
    model_class: type[Any],
    select: Callable[..., object],
    before: Callable[[keras.Model], None] | None = None,
) -> None:
    """Makes every `model_class` build its compile state from one replica.

    For a model class whose instances always have a replication strategy
    (`ParallelModel`): its `_maybe_symbolic_build` runs `before(model)`, then
    `symbolic_build_from_local_replica` with `select(model, batch)`.
    """

    def _maybe_symbolic_build(model, iterator=None, data_batch=None):
        if before is not None:
            before(model)
        symbolic_build_from_local_replica(
            model, iterator, data_batch, lambda batch: select(model, batch)
        )

    interceptions.patch(
        model_class,
        "_maybe_symbolic_build",
        _maybe_symbolic_build,
        by=__name__,
        when="at import of parallel_keras.data_parallel.parallel_model",
        why="ParallelModel overrides Keras's private _maybe_symbolic_build: it builds "
        "its compile state from one replica's batch.",
    )


def maybe_symbolic_build(model: keras.Model, data_batch: object) -> None:
    """Keras's `_maybe_symbolic_build(data_batch=...)`: compile state, built once.

    What `fit` runs before its first step; `train_on_batch` & co. call it the
    same way. Same signature on Keras 3.5 to 3.15.
    """
    model._maybe_symbolic_build(data_batch=data_batch)
