# SPDX-License-Identifier: Apache-2.0
"""The model `multi_gpu_model` returns: the template, trained on replicas.

A `ParallelModel` holds no weights of its own. It calls the template, whose
variables were moved into the replication strategy, so the two models share
every variable: what one trains, the other sees, and what either saves is the
template. It stands in for Keras 2's parallel model where scripts touch it
(the inputs, outputs, their names, `layers`, `get_layer`, `metrics_names`)
and trains as Keras 2's did: the weights trainable at compile
(`trainable_at_compile.py`), targets and metric names as Keras 2 took them
(`targets.py`).

How `fit` runs
--------------
Every hook, in the order it runs; each names its module (`data_parallel/`
unless said otherwise). `evaluate` and `predict` take the same route
without the optimizer; `*_on_batch` go through `Execution.train_on_batch`
& co. (`execution.py`) to the same steps.

Set up once, before any `fit`:

0. `multi_gpu_model` (`multi_gpu_model.py`) changes the template in one
   place, `template_adoption.adopt_template`, which records what it changed
   (`TemplateAdoption.undo`): BatchNormalization synchronized, the variables
   moved into the strategy (`_internals.variables`), layers' own seed
   generators drawing per replica (`_internals.seed_generators.
   replicate_seed_generators`), the optimizer adopted
   (`strategies.adopt_optimizer`), the template's own methods on the
   instance (`template.attach_template`). `compile` (below) adopts the
   optimizer passed to it and, as `fit` and `train_on_batch` do again, sets
   up its clip after the all-reduce (`steps.set_up_optimizer`). Called
   from the `__init__` of Keras 2's `ModelMGPU(Model)` wrapper (recognized
   when its class was defined, `wrapper_classes.py`), `multi_gpu_model`
   last makes that instance a subclass of its class and `ParallelModel`
   (`adoption.adopt_constructing_wrapper`, recorded: `WrapperAdoption`);
   the wrapper then runs every step below as this class. At import,
   this module gives `ParallelModel` its first-batch symbolic build
   (`_internals.symbolic_build.install_class_symbolic_build`, last lines).

`ParallelModel.fit(x, y, ...)`:

1. `_ensure_current`: the template still belongs to this model's strategy
   (`_internals.captured_strategy`); `TrainableAtCompile.check` warns as
   Keras 2 did if `trainable` changed since compile
   (`trainable_at_compile.py`).
2. The arguments as Keras 2 took them: `keras2_arguments.call_data` and
   `fit_keywords`, `class_weights.with_class_weights`,
   `sample_weights.keras2_call_arguments`.
3. Checks before any step: `Execution.check_call` (`execution.py`: batch
   size, rows, shapes, a stateful template's batch, checkpoint folders) and
   `endless.check_steps`.
4. `Execution.running()` (`execution.py`) opens the run: a layer added to
   the template since `multi_gpu_model` is adopted
   (`TemplateAdoption.adopt_added_layers`, usually nothing to do); Keras's
   epoch iterators read Python data one batch per step
   (`python_data.install`, through `_internals.epoch_iterator`); and the
   strategy is handed this model's
   batch preparation, `Execution.prepare` over `batches.prepare_dataset`
   (`cluster/prepared.preparing_batches(strategy, prepare)`).
5. `keras.Model.fit` (Keras) makes its `TFEpochIterator`, which calls
   `strategy.experimental_distribute_dataset`: the prepared strategies
   (`cluster/prepared.py`) map each global batch to a `batches.PreparedBatch`
   (tiled where a replica would get no rows) or leave it whole when it splits
   evenly. Over Python data the iterator reads `python_data.StepByStepDataset`
   instead.
6. Keras's `_maybe_symbolic_build`, replaced for this class
   (`_internals.symbolic_build`): the optimizer is built for the weights
   trainable at compile (`_build_trained_optimizer`), and the compile state
   from one replica's batch shapes, targets in output order
   (`targets.symbolic_batch_in_output_order`).
7. `make_train_function` (below) wraps Keras's train function so frozen
   BatchNormalization layers train as in Keras 2
   (`trainable_at_compile.with_keras2_batchnorm`; their flags are set for
   each call only, the module's docstring says why).
8. Callbacks' `on_train_begin`; a resumed multi-worker run may start at a
   later epoch and skip batches (`multi_worker/backup.py`, through
   `_internals.compiled_functions`).
9. Per step, Keras's train function runs `train_step` (below) on each replica:
   `steps.train_step` builds one `steps.StepContext` (the replica's slice
   unpacked by `batches.unpack`, the rows it keeps, the batch's rows, how
   `prepare_dataset` split it, training or not, the merge policy), points
   seedless random ops at this replica's stream
   (`_internals.seed_generators.use_replica_seed_generator`, in each trace:
   the module's docstring says why), calls the template (`call`), computes
   the loss with targets as Keras 2 fed them
   (`compute_loss`, `targets.as_keras2_fed`, losses scaled in
   `losses.scaled_for_replicas`) weighted by the replica's share, applies
   the gradients (`accumulation.apply_gradients`; the optimizer clips after
   the all-reduce) and updates the metrics once per batch or per replica
   (`steps._merged_metrics` / `_local_metrics`, `central_storage.py`).
10. Under MultiWorkerMirroredStrategy Keras reduces the replicas' logs
    (`_internals.multi_worker`'s scalar-mean workaround).
11. `running()` closes: the strategy's preparation is handed back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import captured_strategy, symbolic_build
from parallel_keras.data_parallel import (
    accumulation,
    class_weights,
    endless,
    keras2_arguments,
    keras2_layers,
    list_batches,
    sample_weights,
    steps,
    strategies,
    template_adoption,
    trainable_at_compile,
)
from parallel_keras.data_parallel import execution as execution_lib
from parallel_keras.data_parallel import losses as losses_lib
from parallel_keras.data_parallel import targets as targets_lib
from parallel_keras.data_parallel import template as template_lib
from parallel_keras.saving import atomic


class ParallelModel(keras2_layers.Keras2Surface, atomic.SavesItsTemplate, keras.Model):
    """A data-parallel view of a template model.

    Built by `parallel_keras.multi_gpu_model`; not meant to be constructed
    directly. Use it like the template: `compile`, `fit`, `evaluate`,
    `predict`, the `*_on_batch` methods, `summary`, `get_layer`. Each global
    batch is split across the replicas and the gradients are combined, so
    training gives the same weights as one device with the same batch.

    `save`, `save_weights` and `load_weights` act on the template, so the
    files they write load on one device into the template's architecture.
    """

    # Keras's trainer sets them (None until made).
    train_function: Any
    predict_function: Any

    def __init__(
        self,
        template: keras.Model,
        strategy: tf.distribute.Strategy,
        replica_devices: Sequence[str],
        cpu_merge: bool,
        cpu_relocation: bool,
        batch_loss: str = "auto",
        stateful_batch: int | None = None,
        name: str | None = None,
    ):
        super().__init__(name=name or f"{template.name}_parallel", dtype=template.dtype_policy)
        self._template = template
        self._strategy = strategy
        self._replica_devices = tuple(replica_devices)
        self._cpu_merge = bool(cpu_merge)
        self._cpu_relocation = bool(cpu_relocation)
        self._batch_loss = batch_loss
        self._global_loss = batch_loss == "global"
        self._trained: trainable_at_compile.TrainableAtCompile | None = None
        # What `multi_gpu_model` changed on the template (it sets it).
        self._adoption: template_adoption.TemplateAdoption | None = None
        self._execution = execution_lib.Execution(
            self, strategy, replicate_all=False, stateful_batch=stateful_batch
        )
        template_names = keras2_layers.template_output_names(template)
        if template_names:
            self.output_names = losses_lib.unique_output_names(template_names)
        self.built = True

    # --- What Keras 2's parallel model exposed -------------------------------

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

    @property
    def gradient_reduction(self) -> strategies.GradientReduction:
        """How gradients are combined across the replicas."""
        return strategies.strategy_reduction(self._strategy)

    @property
    def batch_loss(self) -> str:
        """`"global"` (loss over the whole batch), `"replica"`, or `"auto"` before compile."""
        if self._batch_loss == "auto" and self.compiled:
            return "global" if self._global_loss else "replica"
        return self._batch_loss

    @property
    def metrics_names(self) -> list[str]:
        """Names of the values `evaluate` and `*_on_batch` return, in order, as
        Keras 2 listed them (see `execution.metric_names`)."""
        return execution_lib.metric_names(self)

    def get_layer(self, name: str | None = None, index: int | None = None) -> keras.layers.Layer:
        """A layer by name (the template, or one of its layers) or by index in
        `layers` (Keras 2's positions).

        Raises:
            ValueError: If no layer has that name or index.
        """
        if name is not None and name == self._template.name:
            return self._template
        if name is None:
            return super().get_layer(index=index)
        return self._template.get_layer(name=name)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        """Runs the template on this replica's slice of the batch."""
        return self._template(inputs, training=training)

    # --- Compile and steps ---------------------------------------------------

    def compile(
        self,
        optimizer="rmsprop",
        loss=None,
        loss_weights=None,
        metrics=None,
        weighted_metrics=None,
        **kwargs,
    ) -> None:
        """Compiles as `keras.Model.compile`, creating state on the replicas.

        An optimizer instance created outside the replication strategy (as in
        every legacy script) is moved into it, so it keeps its identity and
        any callback holding it still works. Loss-name dicts must name the
        parallel model's `output_names`; on list outputs, those a loss dict
        leaves out get no loss (Keras 2's reading).
        """
        for name, value in (
            ("loss", loss),
            ("loss_weights", loss_weights),
            ("metrics", metrics),
            ("weighted_metrics", weighted_metrics),
        ):
            losses_lib.check_output_keys(self, value, name)
        loss, loss_weights, metrics, weighted_metrics = keras2_arguments.compile_arguments(
            self, loss, loss_weights, metrics, weighted_metrics
        )
        losses_lib.check_loss_scaling(self, optimizer)
        accumulation.check_accumulation_optimizer(optimizer, self._strategy)
        trainable_at_compile.check_optimizer_covers_weights(self, optimizer)
        if isinstance(optimizer, keras.optimizers.Optimizer):
            strategies.adopt_optimizer(optimizer, self._strategy)
        loss, loss_weights = losses_lib.losses_in_output_order(self, loss, loss_weights)
        with self._strategy.scope():
            super().compile(
                optimizer,
                loss=losses_lib.scaled_for_replicas(loss),
                loss_weights=loss_weights,
                metrics=targets_lib.keras2_metric_names(metrics),
                weighted_metrics=targets_lib.keras2_metric_names(weighted_metrics),
                **kwargs,
            )
        # An optimizer Keras made in the scope (a name: "rmsprop"): Keras
        # 3.5-3.7 gave its `iterations` no aggregation, so its replica-context
        # update fails under CentralStorageStrategy; recreated as an adopted
        # optimizer's (a no-op where Keras passed the aggregation on).
        _internals.relocate_variables(self.optimizer.variables, self._strategy)
        steps.set_up_optimizer(self.optimizer)
        if self._batch_loss == "auto":
            self._global_loss = not losses_lib.all_keras_builtins(loss, metrics, weighted_metrics)
        self._trained = trainable_at_compile.TrainableAtCompile(self)

    def train_step(self, data) -> dict[str, Any]:
        """One replica's optimizer step (see `steps.py`) on the weights
        trainable at compile, as in Keras 2; returns metric logs."""
        trained = None if self._trained is None else self._trained.variables
        return steps.train_step(
            self, data, global_loss=self._global_loss, trainable_weights=trained
        )

    def test_step(self, data) -> dict[str, Any]:
        """One replica's loss and metrics (see `steps.py`); returns metric logs."""
        return steps.test_step(self, data, global_loss=self._global_loss)

    def predict_step(self, data) -> Any:
        """One replica's outputs for the rows it reports."""
        return steps.predict_step(self, data)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras's loss, targets and weights taken as Keras 2 took them."""
        y, sample_weight = targets_lib.as_keras2_fed(self, y, y_pred, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras's metrics, targets and weights taken as Keras 2 took them."""
        y, sample_weight = targets_lib.as_keras2_fed(self, y, y_pred, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def make_train_function(self, force=False):
        """Keras's train function, run with frozen BatchNormalization layers
        as Keras 2 trained them (see `trainable_at_compile.keras2_batchnorm`)."""
        if self.train_function is not None and not force:
            return self.train_function
        super().make_train_function(force=force)
        # interception: frozen BatchNormalization flags toggled around each
        # train-function call, from the first step.
        self.train_function = trainable_at_compile.with_keras2_batchnorm(
            self.train_function, self._template
        )
        return self.train_function

    def make_predict_function(self, force=False):
        """Keras's predict function, concatenating outputs where `cpu_merge` says."""
        if self.predict_function is not None and not force:
            return self.predict_function
        super().make_predict_function(force=force)
        concatenate = self.predict_function
        merge_device = "/cpu:0" if self._cpu_merge else self._replica_devices[0]

        def predict_function(data):
            with tf.device(merge_device):
                return concatenate(data)

        self.predict_function = predict_function
        return predict_function

    # --- Training entry points -------------------------------------------------

    def fit(
        self, x: Any = None, y: Any = None, batch_size: int | None = None, *args, **kwargs
    ) -> keras.callbacks.History:
        """`keras.Model.fit`, each global batch split across the replicas.

        Raises:
            ValueError: If the data has no rows, `batch_size` is not a
                positive integer, array shapes do not fit the template, a
                stateful template is given another batch size, or a
                `ModelCheckpoint` callback's folder cannot be written.
            RuntimeError: If `multi_gpu_model` was called on the template
                again since this parallel model was made.
        """
        self._ensure_current()
        if self._trained is not None:
            self._trained.check(self)
        x, y, _ = keras2_arguments.call_data(self, x, y)
        kwargs = keras2_arguments.fit_keywords(self, kwargs)
        x, kwargs = class_weights.with_class_weights(self, x, kwargs)
        kwargs = sample_weights.keras2_call_arguments(self, "fit", x, y, kwargs)
        batch_size = self._execution.check_call(
            x, batch_size, "fit", callbacks=kwargs.get("callbacks")
        )
        endless.check_steps(x, "fit", args, kwargs)
        steps.set_up_optimizer(getattr(self, "optimizer", None))
        x = list_batches.keras2_batches(x)
        if "validation_data" in kwargs:
            kwargs["validation_data"] = list_batches.keras2_batches(kwargs["validation_data"])
        with self._execution.running():
            return super().fit(x, y, batch_size, *args, **kwargs)

    def evaluate(
        self, x: Any = None, y: Any = None, batch_size: int | None = None, *args, **kwargs
    ) -> Any:
        """`keras.Model.evaluate` on the replicas; raises as `fit` does."""
        self._ensure_current()
        x, y, _ = keras2_arguments.call_data(self, x, y)
        kwargs = keras2_arguments.fit_keywords(self, kwargs)
        kwargs = sample_weights.keras2_call_arguments(self, "evaluate", x, y, kwargs)
        batch_size = self._execution.check_call(x, batch_size, "evaluate")
        endless.check_steps(x, "evaluate", args, kwargs)
        x = list_batches.keras2_batches(x)
        with self._execution.running():
            return super().evaluate(x, y, batch_size, *args, **kwargs)

    def predict(self, x: Any, batch_size: int | None = None, *args, **kwargs) -> Any:
        """`keras.Model.predict` on the replicas, rows in input order; raises as `fit` does."""
        self._ensure_current()
        x = keras2_arguments.call_data(self, x)[0]
        sample_weights.check_rows("predict", x)
        x = keras2_arguments.predict_input(x)
        batch_size = self._execution.check_call(x, batch_size, "predict")
        endless.check_steps(x, "predict", args, kwargs)
        x = list_batches.keras2_batches(x, inputs_only=True)
        with self._execution.running():
            return super().predict(x, batch_size, *args, **kwargs)

    def train_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        class_weight: dict | None = None,
        return_dict: bool = False,
    ) -> Any:
        """One optimizer step on one global batch, split across the replicas.

        Returns:
            The loss and metrics, as `keras.Model.train_on_batch`.

        Raises:
            RuntimeError: If the model is not compiled.
            ValueError: If both `sample_weight` and `class_weight` are given,
                or a stateful template is given another batch size.
        """
        self._ensure_current()
        if self._trained is not None:
            self._trained.check(self)
        x, y, sample_weight = keras2_arguments.call_data(self, x, y, sample_weight)
        steps.set_up_optimizer(getattr(self, "optimizer", None))
        return self._execution.train_on_batch(x, y, sample_weight, class_weight, return_dict)

    def test_on_batch(
        self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False
    ) -> Any:
        """Loss and metrics of one global batch, split across the replicas."""
        self._ensure_current()
        x, y, sample_weight = keras2_arguments.call_data(self, x, y, sample_weight)
        return self._execution.test_on_batch(x, y, sample_weight, return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """Outputs for one global batch, split across the replicas, rows in order."""
        self._ensure_current()
        return self._execution.predict_on_batch(keras2_arguments.call_data(self, x)[0])

    def reset_states(self) -> None:
        """Resets every stateful layer of the template, on every replica."""
        template_lib.reset_states(self._template)

    def _ensure_current(self) -> None:
        owner = captured_strategy.model_strategy(self._template)
        if owner is not self._strategy:
            raise RuntimeError(
                "This parallel model no longer owns its template's weights: "
                "multi_gpu_model was called again on the template "
                f"{self._template.name!r} with other devices or options, which "
                "moved the weights there. Received: a parallel model over "
                f"{len(self._replica_devices)} replicas. Use the parallel "
                "model returned by the latest multi_gpu_model call."
            )

    # --- The template is what gets saved and summarized -----------------------

    def save(self, filepath: str | os.PathLike, overwrite: bool = True, **kwargs) -> None:
        """Saves the template (shared weights) atomically, loadable on one device.

        Raises:
            ValueError: If the suffix is not one Keras writes, or the folder
                is missing or is a file.
            PermissionError: If the file or its folder is read-only.
            FileExistsError: If `overwrite=False`, the file exists and there
                is no terminal to ask on.
        """
        atomic.save_model(self._template, filepath, overwrite=overwrite, **kwargs)

    def save_weights(self, filepath: str | os.PathLike, overwrite: bool = True, **kwargs) -> None:
        """Saves the template's weights atomically (`.weights.h5` or `.h5`).

        Raises:
            ValueError, PermissionError, FileExistsError: As `save`.
        """
        atomic.save_weights(self._template, filepath, overwrite=overwrite, **kwargs)

    def load_weights(
        self, filepath: str | os.PathLike, skip_mismatch: bool = False, **kwargs
    ) -> None:
        """Loads weights into the template; on a mismatch changes nothing.

        Also reads Keras 2 files written from a legacy `multi_gpu_model`
        (see `parallel_keras.load_weights`).

        Raises:
            ValueError: If the file is missing, not HDF5, truncated, or does
                not match the template (`MismatchError`); the template is
                left unchanged.
        """
        from parallel_keras.saving import weights

        weights.load_weights(
            self._template,
            filepath,
            by_name=kwargs.pop("by_name", False),
            skip_mismatch=skip_mismatch,
            **kwargs,
        )

    def summary(self, *args, **kwargs) -> None:
        """The template's summary (the parallel model holds no weights of its
        own), with Keras 2's warning if the trainable weights changed since
        compile (see `trainable_at_compile.py`)."""
        if self._trained is not None:
            self._trained.check(self, always=True)
        return self._template.summary(*args, **kwargs)

    def get_config(self) -> dict[str, Any]:
        """Not serialized itself: its template is.

        Raises:
            NotImplementedError: Always; use the template's config.
        """
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
            f"gradient_reduction={str(self.gradient_reduction)!r} "
            f"batch_loss={self.batch_loss!r} "
            f"strategy={strategies.describe(self._strategy)} "
            f"params={self._template.count_params():,}>"
        )


# Keras's first-batch symbolic build reads one replica's batch (see
# `_internals.symbolic_build`).
def _build_trained_optimizer(model: ParallelModel) -> None:
    # The optimizer is built for the weights trainable at compile (Keras 2).
    if model._trained is not None:
        with model._strategy.scope():
            model._trained.build_optimizer(model.optimizer)


def _symbolic_batch(model: ParallelModel, batch):
    batch = execution_lib.select_keras_batch(batch)
    return targets_lib.symbolic_batch_in_output_order(model, batch)


# interception: ParallelModel._maybe_symbolic_build (class), at import.
symbolic_build.install_class_symbolic_build(
    ParallelModel, _symbolic_batch, before=_build_trained_optimizer
)
