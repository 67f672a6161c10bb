"""The model `multi_gpu_model` returns: the template, trained on replicas.

A `ParallelModel` holds no weights of its own. It calls the template, whose
variables were moved into the replication strategy, so the two models share
every variable: what one trains, the other sees, and what either saves is the
template.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras.data_parallel import strategies


class ParallelModel(_internals.SymbolicBuildFromLocalReplica, keras.Model):
    """A data-parallel view of a template model.

    Built by `parallel_keras.multi_gpu_model`; not meant to be constructed
    directly. Use it like the template: `compile`, `fit`, `evaluate`,
    `predict`, the `*_on_batch` methods, `summary`, `get_layer`. Each global
    batch is split across the replicas and the gradients are combined, so
    training gives the same weights as one device with the same batch.

    `save`, `save_weights` and `load_weights` act on the template, so the
    files they write load on one device into the template's architecture.
    """

    def __init__(
        self,
        template: keras.Model,
        strategy: tf.distribute.Strategy,
        replica_devices: list[str],
        cpu_merge: bool,
        cpu_relocation: bool,
        name: str | None = None,
    ):
        super().__init__(name=name or f"{template.name}_parallel")
        self._template = template
        self._strategy = strategy
        self._replica_devices = tuple(replica_devices)
        self._cpu_merge = bool(cpu_merge)
        self._cpu_relocation = bool(cpu_relocation)
        self.built = True

    @property
    def template(self) -> keras.Model:
        """The model passed to `multi_gpu_model`; it shares these weights."""
        return self._template

    @property
    def replica_devices(self) -> tuple[str, ...]:
        """The devices the template is replicated on, one per replica."""
        return self._replica_devices

    @property
    def strategy(self) -> tf.distribute.Strategy:
        """The `tf.distribute.Strategy` that runs the replicas."""
        return self._strategy

    def call(self, inputs, training=None):
        return self._template(inputs, training=training)

    def compile(self, optimizer="rmsprop", *args, **kwargs) -> None:
        """Compiles as `keras.Model.compile`, creating state on the replicas.

        An optimizer instance created outside the replication strategy (as in
        every legacy script) is moved into it, so it keeps its identity and
        any callback holding it still works.
        """
        if isinstance(optimizer, keras.optimizers.Optimizer):
            adopt_optimizer(optimizer, self._strategy)
        with self._strategy.scope():
            super().compile(optimizer, *args, **kwargs)

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """The template's loss, weighted so uneven replica batches add up.

        Keras averages each replica's loss over its own rows and then over the
        replicas. When the global batch does not split evenly (10 rows on 4
        replicas: 3/3/2/2, or fewer rows than replicas) that weighs rows
        unequally. Here each replica's gradient is scaled by its share of the
        global batch, so the update equals one device's. The value, which
        the loss metric records, is left as Keras computes it.
        """
        loss = super().compute_loss(
            x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training
        )
        replica_context = tf.distribute.get_replica_context()
        if replica_context is None or replica_context.num_replicas_in_sync == 1:
            return loss
        rows = next((t for t in tf.nest.flatten(x) if t is not None), None)
        if rows is None:
            return loss
        local = tf.cast(tf.shape(rows)[0], loss.dtype)
        total = replica_context.all_reduce(tf.distribute.ReduceOp.SUM, local)
        share = tf.math.divide_no_nan(
            local * replica_context.num_replicas_in_sync, total
        )
        weighted = loss * share
        return weighted + tf.stop_gradient(loss - weighted)

    # Training entry points check that the template still lives here.

    def fit(self, *args, **kwargs):
        self._ensure_current()
        return super().fit(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        self._ensure_current()
        return super().evaluate(*args, **kwargs)

    def predict(self, *args, **kwargs):
        self._ensure_current()
        return super().predict(*args, **kwargs)

    # Keras's `*_on_batch` hand the whole batch to every replica (and
    # `predict_on_batch` then returns it once per replica). Splitting the
    # batch first gives each replica its slice, as `fit` does.

    def train_on_batch(
        self, x, y=None, sample_weight=None, class_weight=None, return_dict=False
    ):
        self._ensure_current()
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError(
                    "Pass `sample_weight` or `class_weight`, not both. Received: "
                    f"sample_weight={sample_weight}, class_weight={class_weight}."
                )
            sample_weight = _class_weight_to_sample_weight(y, class_weight)
        x, y, sample_weight = self._split_batch(x, y, sample_weight)
        return super().train_on_batch(
            x, y, sample_weight=sample_weight, return_dict=return_dict
        )

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._ensure_current()
        x, y, sample_weight = self._split_batch(x, y, sample_weight)
        return super().test_on_batch(
            x, y, sample_weight=sample_weight, return_dict=return_dict
        )

    def predict_on_batch(self, x):
        self._ensure_current()
        (x,) = self._split_batch(x)
        return super().predict_on_batch(x)

    def _split_batch(self, *parts):
        """One global batch as per-replica values (None parts stay None)."""
        present = tuple(part for part in parts if part is not None)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF
        )
        dataset = tf.data.Dataset.from_tensors(present).with_options(options)
        distributed = next(
            iter(self._strategy.experimental_distribute_dataset(dataset))
        )
        values = iter(distributed)
        return tuple(None if part is None else next(values) for part in parts)

    def _ensure_current(self) -> None:
        owner = _internals.model_strategy(self._template)
        if owner is not self._strategy:
            raise RuntimeError(
                "This parallel model no longer owns its template's weights: "
                "multi_gpu_model was called again on the template "
                f"{self._template.name!r} with other devices or options, which "
                "moved the weights there. Received: a parallel model over "
                f"{len(self._replica_devices)} replicas. Use the parallel "
                "model returned by the latest multi_gpu_model call."
            )

    # The template is what gets saved, summarized and looked up.

    def save(self, filepath, overwrite=True, **kwargs) -> None:
        """Saves the template (shared weights) atomically, loadable on one device."""
        from parallel_keras.saving import atomic  # pylint: disable=g-import-not-at-top

        atomic.save_model(self._template, filepath, overwrite=overwrite, **kwargs)

    def save_weights(self, filepath, overwrite=True, **kwargs) -> None:
        """Saves the template's weights atomically (`.weights.h5` or `.h5`)."""
        from parallel_keras.saving import atomic  # pylint: disable=g-import-not-at-top

        atomic.save_weights(self._template, filepath, overwrite=overwrite, **kwargs)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs) -> None:
        """Loads weights into the template; on a mismatch changes nothing.

        Also reads Keras 2 files written from a legacy `multi_gpu_model`
        (see `parallel_keras.load_weights`).
        """
        from parallel_keras.saving import weights  # pylint: disable=g-import-not-at-top

        weights.load_weights(
            self._template,
            filepath,
            by_name=kwargs.pop("by_name", False),
            skip_mismatch=skip_mismatch,
            **kwargs,
        )

    def summary(self, *args, **kwargs) -> None:
        return self._template.summary(*args, **kwargs)

    def get_layer(self, name: str | None = None, index: int | None = None):
        return self._template.get_layer(name=name, index=index)

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(
            "A ParallelModel is not serialized itself: its template is. "
            "Received: get_config() on a parallel model. Use "
            "parallel_model.template.get_config(), or parallel_model.save(...) "
            "which saves the template."
        )

    def __repr__(self) -> str:
        devices = ", ".join(
            tf.DeviceSpec.from_string(device).to_string().split("device:")[-1]
            for device in self._replica_devices
        )
        return (
            f"<ParallelModel {self.name!r} template={self._template.name!r} "
            f"replicas={len(self._replica_devices)} devices=[{devices}] "
            f"cpu_merge={self._cpu_merge} cpu_relocation={self._cpu_relocation} "
            f"strategy={strategies.describe(self._strategy)} "
            f"params={self._template.count_params():,}>"
        )


def _class_weight_to_sample_weight(y, class_weight: dict) -> np.ndarray:
    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    return np.array(
        [class_weight[int(label)] for label in labels.reshape(-1)], "float32"
    )


def adopt_optimizer(
    optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy
) -> None:
    """Moves an optimizer (and any state it has) into `strategy`."""
    if _internals.optimizer_strategy(optimizer) is strategy:
        return
    _internals.relocate_variables(optimizer.variables, strategy)
    _internals.set_optimizer_strategy(optimizer, strategy)
