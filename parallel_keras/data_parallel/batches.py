# SPDX-License-Identifier: Apache-2.0
"""Global batches prepared so that no replica ever computes on an empty slice.

`tf.distribute` splits a global batch of B rows into per-replica slices of
ceil(B / N) rows, so some replicas get nothing whenever
ceil(B / N) * (N - 1) >= B: fewer rows than replicas (a final partial batch,
`predict` on one row), but also e.g. 6 rows on 4 replicas (2/2/2/0). A replica
with an empty slice still runs the model, and kernels mishandle empty
batches: oneDNN's Conv2D (TensorFlow's default on CPU) returns a wrong shape,
and cuDNN kernels crashed Keras 2's towers the same way
(keras-team/keras#11844).

Such a batch is *tiled*: every replica receives the whole batch, computes on
it, and a per-row `keep` mask says which rows it reports. Concatenated in
replica order, the kept rows are the batch in its original order. The
arithmetic stays exactly one device's:

* gradients: every replica's loss is the whole batch's loss, and Keras
  averages the replicas' gradients, so the update is the batch's;
* synchronized BatchNormalization averages N copies of the batch, which has
  the batch's own mean and variance;
* metrics and `predict` see only kept rows, so every row counts once.

The same tiling, applied to every batch, runs a template with one device's
semantics on the strategy that owns its variables (`replicate_all=True`).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf


class PreparedBatch(NamedTuple):
    """A global batch as Keras built it, with the rows each replica reports."""

    data: Any
    """Keras's batch: `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)`."""
    keep: tf.Tensor
    """float32 `(rows,)`: 1 for rows the replica holding them reports."""
    batch_rows: tf.Tensor
    """float32 `(rows, 2)`: in every row, the rows split across the replicas
    (tiled copies included) and the batch's own rows, so each replica knows
    its share without a collective."""


def leaves_empty_replica(rows, num_replicas: int):
    """Whether tf.distribute's split of `rows` leaves some replica no rows."""
    per_replica = (rows + num_replicas - 1) // num_replicas
    return per_replica * (num_replicas - 1) >= rows


def prepare_dataset(
    dataset: tf.data.Dataset,
    num_replicas: int,
    replicate_all: bool = False,
    check_rows: Callable[[tf.Tensor], tf.Operation] | None = None,
    static_rows_error: Callable[[int], Exception | None] | None = None,
) -> tf.data.Dataset:
    """Maps each global batch of `dataset` to a `PreparedBatch`.

    Args:
        dataset: Batched elements as Keras's data adapters produce them.
        num_replicas: Replicas the batch will be split across.
        replicate_all: Tile every batch (one device's semantics), not only
            those that would leave a replica empty. Defaults to False.
        check_rows: Called with each batch's row count; returns an assertion
            op (e.g. the fixed batch of a stateful model). Defaults to None.
        static_rows_error: With `check_rows`, for a batch size known up
            front: returns the error to raise now for that size, or None if
            it passes (then no per-batch check runs). Defaults to None.

    Returns:
        The mapped dataset, its tensors copied into memory TensorFlow owns
        (see `_owned`); as it is, only copied, when every batch has the same
        known size, a multiple of `num_replicas`; or `dataset` itself when
        its elements hold something other than dense tensors (sparse or
        ragged rows cannot be tiled, and are split as tf.distribute does).
    """
    # A `None` in the batch (Keras 2's `sample_weight=[None, w]`: no weights
    # for that output) is carried through as it is.
    specs = [spec for spec in tf.nest.flatten(dataset.element_spec) if not _is_none_spec(spec)]
    if not specs or not all(isinstance(spec, tf.TensorSpec) for spec in specs):
        return dataset
    if all(spec.shape.rank == 0 for spec in specs):
        return dataset
    unpacked = isinstance(dataset.element_spec, tuple)
    # A batch size known when the dataset is built decides here, keeping the
    # static shapes (a shape left unknown slows some models down, e.g. an
    # LSTM's loop); otherwise each batch decides as it comes.
    leading = {spec.shape[0] for spec in specs if spec.shape.rank}
    static_rows: int | None = leading.pop() if len(leading) == 1 else None
    if static_rows is not None:
        static_tile = replicate_all or (
            static_rows > 0 and leaves_empty_replica(static_rows, num_replicas)
        )
    else:
        static_tile = None
    if static_rows is not None and check_rows is not None and static_rows_error:
        error = static_rows_error(static_rows)
        if error is not None:
            raise error
        check_rows = None
    if (
        static_rows is not None
        and static_tile is False
        and check_rows is None
        and static_rows % num_replicas == 0
    ):
        # Every batch splits into equal, non-empty slices: nothing to mark,
        # and the steps know each replica's share from the static shapes.
        return dataset.map(lambda *element: _owned(element if unpacked else element[0]))

    def prepare(*element):
        data = _owned(element if unpacked else element[0])
        rows = _rows(data)
        checks = [check_rows(rows)] if check_rows is not None else []
        with tf.control_dependencies(checks):
            rows = tf.identity(rows)
        if replicate_all or static_tile:
            tiled_data, keep = _tiled(data, rows, num_replicas)
        elif static_tile is False:
            with tf.control_dependencies(checks):
                keep = tf.ones([static_rows], tf.float32)
            tiled_data = data
        else:
            tile = tf.logical_and(rows > 0, leaves_empty_replica(rows, num_replicas))
            tiled_data, keep = tf.cond(
                tile,
                lambda: _tiled(data, rows, num_replicas),
                lambda: (data, tf.ones([rows], tf.float32)),
            )
        split = tf.shape(keep)[0]
        counts = tf.cast(tf.stack([split, rows]), tf.float32)
        return PreparedBatch(tiled_data, keep, tf.tile(counts[tf.newaxis], [split, 1]))

    # Not prefetched here: a PyDataset's generator must not be read ahead
    # of Keras's epoch bookkeeping (tf.distribute prefetches to the devices).
    return dataset.map(prepare)


@functools.cache
def _none_spec_type() -> type:
    # tf.data's spec of a `None` component (its class is not public).
    return type(tf.data.Dataset.from_tensors((0, None)).element_spec[1])


def _is_none_spec(spec) -> bool:
    return isinstance(spec, _none_spec_type())


def _owned(data):
    """`data` with every dense tensor copied into memory TensorFlow owns.

    A Python generator's (or a `PyDataset`'s) NumPy batch reaches the
    pipeline without a copy when its memory is 64-byte aligned
    (`Dataset.from_generator`'s `numpy_function`; checked on TF 2.21). The
    whole batch is then protected from in-place reuse, but tf.distribute's
    split hands the first replica a slice that views the same memory and is
    not: the step's ops (`y - y_pred` in the loss, its gradient) wrote into
    it, overwriting the user's targets, which the next epoch read back (one
    device never splits, so never did). Copied, every slice is TensorFlow's
    own; the copy runs in the input pipeline, ahead of the steps.
    """

    def copy(tensor):
        if isinstance(tensor, tf.Tensor):
            return tf.raw_ops.DeepCopy(x=tensor)
        return tensor

    return tf.nest.map_structure(copy, data)


def _rows(data) -> tf.Tensor:
    for tensor in tf.nest.flatten(data):
        if tensor is not None and tensor.shape.rank:
            return tf.shape(tensor, out_type=tf.int32)[0]
    raise ValueError(f"No batched tensor in {data!r}.")


def _tiled(data, rows, num_replicas: int):
    """`data` repeated once per replica, and which copy reports which rows."""

    def tile(tensor):
        if tensor is None or not tensor.shape.rank:
            return tensor
        return tf.concat([tensor] * num_replicas, axis=0)

    # Replica c reports rows [start_c, end_c) of its copy: a balanced,
    # contiguous split, so the kept rows in replica order are the batch.
    replica = tf.range(num_replicas)[:, tf.newaxis]
    base, extra = rows // num_replicas, rows % num_replicas
    start = replica * base + tf.minimum(replica, extra)
    end = start + base + tf.cast(replica < extra, tf.int32)
    row = tf.range(rows)[tf.newaxis, :]
    keep = tf.logical_and(row >= start, row < end)
    return tf.nest.map_structure(tile, data), tf.reshape(tf.cast(keep, tf.float32), [-1])


def batch_of_structures(structure) -> Any:
    """`structure` with lists turned into tuples, for `tf.data`.

    `tf.data.Dataset.from_tensors([a, b])` stacks a list into one tensor; the
    usual Keras 2 form of multi-input data (`[x_a, x_b]`) is a structure.
    """
    if isinstance(structure, list):
        return tuple(batch_of_structures(item) for item in structure)
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(batch_of_structures(item) for item in structure)
    if isinstance(structure, dict):
        return {key: batch_of_structures(value) for key, value in structure.items()}
    return structure


class Split(enum.Enum):
    """How `prepare_dataset` left a batch to tf.distribute's split."""

    MARKED = "marked"
    """A `PreparedBatch`: `keep` says which rows each replica reports and
    `batch_rows` each replica's share (tiled or not)."""
    EQUAL = "equal"
    """Left as Keras built it: every batch splits into equal static slices
    (`prepare_dataset`'s shortcut), so each replica holds 1/N of it."""
    AS_GIVEN = "as_given"
    """Left as Keras built it, rows unknown before the step (sparse, ragged
    or scalar parts): split as tf.distribute does."""


class StepData(NamedTuple):
    """What a replica's step receives, unpacked."""

    x: Any
    y: Any
    sample_weight: Any
    keep: tf.Tensor | None
    """Rows this replica reports; None: all of them (data not prepared)."""
    batch_rows: tf.Tensor | None
    """`[rows split across replicas, rows of the batch]`; None: unknown
    without a collective."""
    split: Split
    """How `prepare_dataset` left the batch."""


def unpack(data) -> StepData:
    """A step's data as `StepData`."""
    keep = batch_rows = None
    if isinstance(data, PreparedBatch):
        data, keep, batch_rows = data.data, data.keep, data.batch_rows[0]
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return StepData(data, None, None, keep, batch_rows, _split(data, keep))
    if len(data) in (1, 2, 3):
        x, y, sample_weight = (*data, None, None)[:3]
        return StepData(x, y, sample_weight, keep, batch_rows, _split(x, keep))
    raise ValueError(
        "Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
        f"`(x, y, sample_weight)`. Received: a tuple of {len(data)} elements."
    )


def _split(x, keep) -> Split:
    if keep is not None:
        return Split.MARKED
    # `prepare_dataset` leaves a dense batch unmarked only when its rows are
    # known up front and split evenly; the replica's slice keeps them static.
    for value in tf.nest.flatten(x):
        if value is not None and value.shape.rank:
            return Split.AS_GIVEN if value.shape[0] is None else Split.EQUAL
    return Split.AS_GIVEN
