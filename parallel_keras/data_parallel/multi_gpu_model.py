# SPDX-License-Identifier: Apache-2.0
"""`multi_gpu_model`: the legacy Keras 2 function, on tf.distribute."""

from __future__ import annotations

import re
from collections.abc import Sequence

import keras
from absl import logging

from parallel_keras import _internals
from parallel_keras import devices as devices_lib
from parallel_keras.data_parallel import adoption, strategies, template_adoption
from parallel_keras.data_parallel import losses as losses_lib
from parallel_keras.data_parallel import parallel_model as parallel_model_lib

ParallelModel = parallel_model_lib.ParallelModel


def multi_gpu_model(
    model: keras.Model,
    gpus: int | Sequence[int] | Sequence[str] | None = None,
    cpu_merge: bool = True,
    cpu_relocation: bool = False,
    *,
    sync_batchnorm: bool = False,
    batch_loss: str = "auto",
) -> ParallelModel:
    """Replicates a model on several devices (data parallelism).

    The legacy `keras.utils.multi_gpu_model` (removed in TF 2.4), rebuilt on
    `tf.distribute`. Each global batch is split across the replicas (batch 64
    on 2 GPUs: 32 each), every replica runs the template on its slice, and the
    gradients are combined, so one epoch gives the same weights as one device
    with the same batch size.

    Unlike the legacy function, the returned model *shares* the template's
    variables: they are moved into the strategy once, never copied. Train
    either model; save either (both save the template).

    The legacy options keep their meaning:

    * `cpu_merge`: where the replicas' outputs are concatenated (`predict`):
      `True` on `/cpu:0`, `False` on the first replica's device. Gradients
      are reduced as suits the devices (`parallel.gradient_reduction`): on
      GPUs what `MirroredStrategy` picks itself (NCCL all-reduce among
      physical GPUs), on CPU devices a reduction through `/cpu:0`, measured
      faster there.
    * `cpu_relocation=True`: the variables live on `/cpu:0` only and the
      replicas compute against them (`CentralStorageStrategy`), the legacy
      way to rescue a model built outside any device scope.

    All settings train to the same weights.

    Batches: a batch that would leave a replica without rows (fewer rows
    than replicas, or e.g. 6 rows on 4 replicas) is given whole to every
    replica, each reporting its share of the rows, so results equal one
    device's and no kernel ever runs on an empty batch.

    Losses over the whole batch: Keras 2 concatenated the towers' outputs
    and computed the loss once; tf.distribute computes it per replica. Both
    agree for per-row losses. `batch_loss="global"` gathers targets, outputs
    and sample weights from every replica and computes the loss and metrics
    over the global batch (needed for e.g. a Cox partial likelihood or a
    batch-hard triplet loss); `"replica"` computes them per replica;
    `"auto"` (the default) picks "replica" when every loss and metric
    passed to `compile` is one of Keras's own, "global" otherwise.

    Stateful models: a template built with `batch_shape=(b, ...)` takes
    global batches of `N * b` rows; each replica keeps the state of its own
    `b` rows across batches, and `reset_states()` on either model resets
    every replica.

    BatchNormalization: a plain `BatchNormalization` normalizes each
    replica's slice on its own, as the legacy towers did, so training
    differs from one device by about 1e-3. Pass `sync_batchnorm=True` to make
    the template's BatchNormalization layers synchronize their batch
    statistics across replicas (it sets `synchronized=True` on them, which
    is saved with the template); a run then matches one device. Moving
    statistics are averaged across replicas either way, so every replica
    holds the same values and what is saved is what was evaluated.

    The template keeps working after wrapping: its own `fit`, `evaluate`,
    `predict` and `*_on_batch` give what they gave before (every replica
    computes its whole batch).

    Args:
        model: The template: a built `keras.Model`. Building it under
            `tf.device('/cpu:0')` (or `parallel_keras.device`) is fine, as
            in legacy scripts: each replica still runs it on its own
            device, as Keras 2's towers did.
        gpus: An int >= 2 (GPUs 0..gpus-1), a list of GPU ids, a list of
            device strings, or `None` for every GPU. On a machine without
            GPUs, GPU ids map to the logical CPU devices made by
            `parallel_keras.simulate_devices`. Defaults to None.
        cpu_merge: Concatenate the replicas' outputs on `/cpu:0`.
            Defaults to True.
        cpu_relocation: Keep the variables on the CPU. Defaults to False.
        sync_batchnorm: Synchronize BatchNormalization statistics across
            replicas. Defaults to False (the legacy behaviour).
        batch_loss: `"auto"`, `"global"` or `"replica"`: over which rows
            losses and metrics are computed. Defaults to "auto".

    Returns:
        A `ParallelModel`, a `keras.Model` used like the template.

    Raises:
        TypeError: If `model` is not a Keras model, is already a parallel
            model, or `gpus` has the wrong type.
        ValueError: If the model is not built, its name or a layer's is
            one TensorFlow cannot use as an op scope (non-ASCII; one device
            fails too), `gpus` asks for fewer than two devices or for
            devices that do not exist, or `batch_loss` is not one of its
            values.

    Example:

    >>> import keras, parallel_keras
    >>> template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> parallel = parallel_keras.multi_gpu_model(template, gpus=2)  # doctest: +SKIP
    >>> parallel.compile(optimizer="sgd", loss="mse")  # doctest: +SKIP
    """
    if isinstance(model, ParallelModel):
        raise TypeError(
            "multi_gpu_model takes the template model, not a parallel model. "
            f"Received: model={model!r}. Pass its template: "
            "multi_gpu_model(parallel_model.template, ...)."
        )
    if not isinstance(model, keras.Model):
        raise TypeError(
            "multi_gpu_model needs a keras.Model to replicate. "
            f"Received: model of type {type(model).__name__}. Build a "
            "keras.Model (Sequential, functional or subclassed) first."
        )
    if not model.built or not model.variables:
        raise ValueError(
            "multi_gpu_model needs a built model: its weights must exist "
            f"before they can be replicated. Received: model {model.name!r} "
            "with no weights yet. Call it on a batch of data or call "
            "model.build(input_shape) first."
        )
    _check_scope_names(model)
    for name, value in (
        ("cpu_merge", cpu_merge),
        ("cpu_relocation", cpu_relocation),
        ("sync_batchnorm", sync_batchnorm),
    ):
        if not isinstance(value, bool):
            raise TypeError(
                f"multi_gpu_model's `{name}` must be True or False. "
                f"Received: {name}={value!r}. Pass {name}=True or {name}=False."
            )
    losses_lib.check_batch_loss(batch_loss)
    replica_devices = devices_lib.replica_devices(gpus)
    strategy = strategies.replication_strategy(replica_devices, cpu_relocation=cpu_relocation)
    stateful_batch = _stateful_batch(model)

    # Everything above only validated; from here the template is changed.
    # Every change to the template, its layers and its optimizer, recorded.
    adopted = template_adoption.adopt_template(model, strategy, stateful_batch, sync_batchnorm)
    _follow_replica_devices(model, strategy, replica_devices)
    with strategy.scope():
        parallel = ParallelModel(
            model,
            strategy,
            replica_devices,
            cpu_merge=cpu_merge,
            cpu_relocation=cpu_relocation,
            batch_loss=batch_loss,
            stateful_batch=stateful_batch,
        )
    parallel._adoption = adopted
    # Keras 2's `ModelMGPU(Model)` wrapper calls us from its `__init__`
    # (recognized when its class was defined: `wrapper_classes.py`); last,
    # so that no earlier failure leaves it swapped. Recorded on the wrapper
    # (`WrapperAdoption.undo`).
    # interception: the constructing wrapper's __class__ (ModelMGPU), at multi_gpu_model.
    adoption.adopt_constructing_wrapper()
    parallel._execution.adopt_added_layers = adopted.adopt_added_layers
    logging.info(
        "multi_gpu_model: %s replicated on %d devices: %s (%s)",
        model.name,
        len(replica_devices),
        ", ".join(replica_devices),
        strategies.strategy_reduction(strategy),
    )
    return parallel


def _stateful_batch(model: keras.Model) -> int | None:
    """The batch a stateful template was built for (None if not stateful)."""
    states = template_adoption.rnn_states(model)
    if not states:
        return None
    return int(states[0].shape[0])


def _follow_replica_devices(model, strategy, replica_devices) -> None:
    """Keras 2's rule for a placed template: each replica on its own device.

    On a Keras without device placement (below 3.11) no layer call can have
    been placed, and the placement package cannot be imported there (its
    hooks refuse that Keras): nothing to follow.
    """
    try:
        _internals.require_placement_support()
    except _internals.PlacementNeedsNewerKeras:
        return
    from parallel_keras.device_placement import replicas

    replicas.follow_replica_devices(model, strategy, replica_devices)


# TensorFlow's op scope names (`tf.name_scope`): the root one, the model's,
# may not start with '_', '-', '/' or '>'.
_ROOT_SCOPE = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_SCOPE = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _check_scope_names(model: keras.Model) -> None:
    """Refuses names TensorFlow cannot scope ops under, before any replica is built.

    Keras opens a `tf.name_scope` per model and layer; TensorFlow refuses
    non-ASCII names there, so training such a model fails on one device
    too, deep inside the first step.
    """
    bad = [] if _ROOT_SCOPE.match(model.name) else [f"model {model.name!r}"]
    seen = set()
    pending = list(getattr(model, "layers", []))
    while pending:
        layer = pending.pop(0)
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if not _SCOPE.match(layer.name):
            bad.append(f"layer {layer.name!r}")
        pending.extend(getattr(layer, "layers", []) or [])
    if bad:
        raise ValueError(
            "TensorFlow names each op after its model and layer, and accepts "
            "only ASCII letters, digits and _ . - / > in those names (the "
            "model's may not start with _ - / >), so this model cannot train "
            "on one device either. Received: "
            + ", ".join(bad[:5])
            + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
            + ". Rename them with ASCII names (keras.Model(..., name='model'), "
            "keras.layers.Dense(..., name='dense_out')) and keep the original "
            "text in a comment."
        )
