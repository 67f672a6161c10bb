# SPDX-License-Identifier: Apache-2.0
"""How a model's Keras methods run on the replicas of its strategy.

Two models run on the replication strategy: the parallel model, which splits
each global batch across the replicas, and the template, whose variables now
live in that strategy and which keeps one device's semantics (`template.py`).

`Execution` holds what both need: preparing datasets as Keras distributes
them (`batches.py`), checking a call's arguments, the `*_on_batch` methods
(Keras's hand the whole batch to every replica), and the fixed batch of a
stateful template.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from parallel_keras._internals import loss_tracking, seed_generators, symbolic_build
from parallel_keras.cluster import prepared
from parallel_keras.data_parallel import batches, python_data, sample_weights
from parallel_keras.saving import atomic


def _nothing() -> None:
    return None


class Execution:
    """Runs one model's batches on its strategy's replicas.

    Args:
        model: The model whose methods run.
        strategy: The replication strategy owning its variables.
        replicate_all: Every replica computes the whole batch (one device's
            semantics) instead of a slice of it.
        stateful_batch: Rows per replica a stateful template was built for,
            or None.
    """

    def __init__(
        self,
        model: keras.Model,
        strategy: tf.distribute.Strategy,
        replicate_all: bool,
        stateful_batch: int | None = None,
    ):
        self.model = model
        self.strategy = strategy
        self.replicate_all = replicate_all
        self.stateful_batch = stateful_batch
        # The template's adoption sets it (`TemplateAdoption.adopt_added_layers`):
        # layers added to the template since, adopted before each run.
        self.adopt_added_layers: Callable[[], None] = _nothing

    @property
    def num_replicas(self) -> int:
        return self.strategy.num_replicas_in_sync

    @property
    def global_batch(self) -> int | None:
        """The only batch size a stateful model takes, or None."""
        if self.stateful_batch is None:
            return None
        if self.replicate_all:
            return self.stateful_batch
        return self.stateful_batch * self.num_replicas

    def prepare(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        return batches.prepare_dataset(
            dataset,
            self.num_replicas,
            replicate_all=self.replicate_all,
            check_rows=self._check_rows if self.stateful_batch else None,
            static_rows_error=self._static_rows_error,
        )

    def running(self):
        """Context in which Keras's datasets for this model are prepared,
        and Python data is read one batch per step (`python_data.py`)."""
        self.set_up_run()
        python_data.install()
        return prepared.preparing_batches(self.strategy, self.prepare)

    def set_up_run(self) -> None:
        """What a run needs before Keras traces its steps: layers added to
        the template adopted, and the replicas' seed counter made
        (`_internals.seed_generators.make_replica_seeds`: made inside the
        first trace, it would have Keras trace the step twice)."""
        self.adopt_added_layers()
        seed_generators.make_replica_seeds(self.strategy)

    # --- Stateful templates ------------------------------------------------

    def stateful_batch_error(self, received: str) -> ValueError:
        """The error for a batch a stateful model cannot take; `received`
        says what was given (`"fit(batch_size=3)"`, `"a batch of 2 rows"`)."""
        return ValueError(
            f"A stateful model takes batches of exactly {self.global_batch} "
            f"rows: the template was built with batch {self.stateful_batch}"
            + (
                f" and is replicated on {self.num_replicas} devices, so each "
                f"replica keeps the state of its own {self.stateful_batch} rows"
                if not self.replicate_all
                else ""
            )
            + f". Received: {received}. Pass batch_size="
            f"{self.global_batch} and a number of rows that is a multiple of "
            f"{self.global_batch}."
        )

    def _static_rows_error(self, rows: int) -> ValueError | None:
        if rows == self.global_batch:
            return None
        return self.stateful_batch_error(f"a batch of {rows} rows")

    def _check_rows(self, rows):
        return tf.debugging.assert_equal(
            rows,
            self.global_batch,
            message=str(self.stateful_batch_error("a batch of another size")),
        )

    def check_call(self, x, batch_size, method: str, callbacks=None):
        """Checks a `fit`/`evaluate`/`predict` call; returns the batch size to use.

        A stock `ModelCheckpoint` among `callbacks` would fail only after the
        first epoch if its folder cannot be written: that is checked now.
        """
        if batch_size is not None and (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1
        ):
            raise ValueError(
                f"`batch_size` is the number of rows per global batch, a "
                f"positive integer. Received: {method}(batch_size="
                f"{batch_size!r}). Pass e.g. batch_size=32, or leave it out "
                "for Keras's default."
            )
        if isinstance(x, tf.data.Dataset) and int(x.cardinality()) == 0:
            raise ValueError(
                f"{method} needs at least one batch, and the dataset given "
                f"holds none. Received: an empty dataset ({method}(x) with "
                f"element spec {x.element_spec}). Pass data with at least "
                "one row."
            )
        rows = _array_rows(x)
        if rows == 0:
            raise ValueError(
                f"{method} needs data, and the arrays given have no rows. "
                f"Received: {method}(x) with shape "
                f"{[tuple(np.shape(v)) for v in tf.nest.flatten(x)]}. Pass at "
                "least one row."
            )
        self._check_shapes(x, method)
        for callback in callbacks or ():
            if isinstance(callback, keras.callbacks.ModelCheckpoint):
                atomic.check_writable_folder(callback.filepath)
        if self.stateful_batch is None:
            return batch_size
        global_batch = self.global_batch  # Known: the template is stateful.
        if batch_size is None:
            batch_size = global_batch
        if batch_size != global_batch:
            raise self.stateful_batch_error(f"{method}(batch_size={batch_size})")
        if rows is not None and global_batch and rows % global_batch:
            raise self.stateful_batch_error(f"{method}(x) with {rows} rows")
        return batch_size

    def _check_shapes(self, x, method: str) -> None:
        """Array inputs against the template's inputs, in global shapes.

        Keras would report a mismatch from inside one replica, quoting that
        replica's slice (16 rows of a batch of 32).
        """
        expected = getattr(self.model, "inputs", None)
        if not expected or not isinstance(x, (np.ndarray, list, tuple)):
            return  # datasets, generators, dicts (matched by name in Keras)
        try:
            arrays = tf.nest.flatten(x)
            inputs = tf.nest.flatten(expected)
        except (TypeError, ValueError):
            return
        if len(arrays) != len(inputs):
            return
        for array, tensor in zip(arrays, inputs):
            shape = getattr(array, "shape", None)
            if shape is None or len(shape) != len(tensor.shape):
                if shape is not None and len(shape) != len(tensor.shape):
                    raise self._shape_error(method, arrays, inputs)
                continue
            for got, want in zip(tuple(shape)[1:], tuple(tensor.shape)[1:]):
                if want is not None and got is not None and int(got) != int(want):
                    raise self._shape_error(method, arrays, inputs)

    def _shape_error(self, method, arrays, inputs) -> ValueError:
        got = [tuple(np.shape(array)) for array in arrays]
        want = [tuple(tensor.shape) for tensor in inputs]
        return ValueError(
            f"Each input must have the shape the template was built for, "
            f"apart from the number of rows: {want}. Received: {method}(x) "
            f"with shapes {got}. Reshape the data, or build the template for "
            "these shapes."
        )

    # --- One batch ---------------------------------------------------------

    def distributed_batch(self, *parts):
        """One global batch, prepared and split as `fit` would split it."""
        while parts and parts[-1] is None:
            parts = parts[:-1]
        data = batches.batch_of_structures(parts)
        rows = _array_rows(data)
        if self.stateful_batch is not None and rows != self.global_batch:
            raise self.stateful_batch_error(f"a batch of {rows} rows")
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        dataset = self.prepare(tf.data.Dataset.from_tensors(data)).with_options(options)
        return next(iter(self.strategy.experimental_distribute_dataset(dataset)))

    def train_on_batch(self, x, y, sample_weight, class_weight, return_dict):
        _require_compiled(self.model, "train_on_batch")
        sample_weights.check_rows("train_on_batch", x, y, sample_weight)
        sample_weight, class_weight = sample_weights.as_keras2_weights(
            getattr(self.model, "output_names", None) or [], y, sample_weight, class_weight
        )
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError(
                    "Pass `sample_weight` or `class_weight`, not both. Received: "
                    f"sample_weight={sample_weight}, class_weight={class_weight}."
                )
            sample_weight = class_weight_to_sample_weight(y, class_weight)
        return self._on_batch("train", x, y, sample_weight, return_dict)

    def test_on_batch(self, x, y, sample_weight, return_dict):
        _require_compiled(self.model, "test_on_batch")
        sample_weights.check_rows("test_on_batch", x, y, sample_weight)
        sample_weight, _ = sample_weights.as_keras2_weights(
            getattr(self.model, "output_names", None) or [], y, sample_weight, None
        )
        return self._on_batch("test", x, y, sample_weight, return_dict)

    def _on_batch(self, kind: str, x, y, sample_weight, return_dict: bool):
        """Runs Keras's train or test function on one prepared global batch."""
        model = self.model
        self.set_up_run()
        batch = self.distributed_batch(x, y, sample_weight)
        symbolic_build.maybe_symbolic_build(model, data_batch=batch)
        getattr(model, f"make_{kind}_function")()
        model.reset_metrics()
        # An iterator, as Keras's own `train_on_batch`/`test_on_batch` pass
        # (Keras 3.5 calls `next` on it; predict takes a list in every version).
        getattr(model, f"{kind}_function")(iter([batch]))
        return self._logs(return_dict)

    def predict_on_batch(self, x):
        sample_weights.check_rows("predict_on_batch", x)
        model = self.model
        self.set_up_run()
        batch = self.distributed_batch(x)
        model.make_predict_function()
        outputs = model.predict_function([batch])
        return tf.nest.map_structure(np.asarray, outputs)

    def _logs(self, return_dict: bool):
        # Read across replicas (each replica's metrics hold its own rows), not
        # the step's per-replica results, which Keras averages.
        logs = {
            name: np.asarray(value).item()
            for name, value in self.model.get_metrics_result().items()
        }
        if return_dict:
            return logs
        return loss_tracking.flatten_metrics_in_order(self.model, logs)


def metric_names(model: keras.Model) -> list[str]:
    """The names of the values `evaluate` and `*_on_batch` return, in order.

    As Keras 2 listed them, so `dict(zip(model.metrics_names, scores))` pairs
    each name with its value. Keras 3's own `metrics_names` lists compiled
    metrics as one `'compile_metrics'` (keras-team/keras#21487); that is
    what this returns until the first batch builds them.
    """
    try:
        names = {name: name for name in model.get_metrics_result()}
    except ValueError:  # Compiled metrics are built by the first batch.
        return [metric.name for metric in model.metrics]
    ordered = loss_tracking.flatten_metrics_in_order(model, names)
    return list(ordered) if isinstance(ordered, list) else [ordered]


def select_keras_batch(batch):
    """Keras's `(x, y, sample_weight)` part of a (possibly prepared) batch."""
    if isinstance(batch, batches.PreparedBatch):
        return batch.data
    return batch


def class_weight_to_sample_weight(y, class_weight: dict) -> np.ndarray:
    if isinstance(y, (list, tuple, dict)) and len(tf.nest.flatten(y)) > 1:
        raise ValueError(
            "`class_weight` applies to a model with one output; this batch "
            f"has {len(tf.nest.flatten(y))} targets. Received: class_weight="
            f"{class_weight}. Pass `sample_weight` per output instead."
        )
    labels = np.asarray(tf.nest.flatten(y)[0])
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    return np.array([class_weight[int(label)] for label in labels.reshape(-1)], "float32")


def _require_compiled(model: keras.Model, method: str) -> None:
    if not model.compiled:
        raise RuntimeError(
            f"You must call `compile()` before using the model. Received: "
            f"{method}() on {model.name!r}, which is not compiled. Call "
            f"{model.name}.compile(optimizer=..., loss=...) first."
        )


def _array_rows(data) -> int | None:
    for value in tf.nest.flatten(data):
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape):
            return int(shape[0]) if shape[0] is not None else None
    return None
