"""`multi_gpu_model`: the legacy Keras 2 function, on tf.distribute."""

from __future__ import annotations

from collections.abc import Sequence

from absl import logging
import keras

from parallel_keras import _internals
from parallel_keras import devices as devices_lib
from parallel_keras.data_parallel import parallel_model as parallel_model_lib
from parallel_keras.data_parallel import strategies

ParallelModel = parallel_model_lib.ParallelModel


def multi_gpu_model(
    model: keras.Model,
    gpus: int | Sequence[int] | Sequence[str] | None = None,
    cpu_merge: bool = True,
    cpu_relocation: bool = False,
    *,
    sync_batchnorm: bool = False,
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

    * `cpu_merge=True`: gradients are reduced on `/cpu:0` and broadcast back
      (the legacy function merged the towers on the CPU).
      `cpu_merge=False`: an all-reduce among the replicas, with no CPU hop.
    * `cpu_relocation=True`: the variables live on `/cpu:0` only and the
      replicas compute against them (`CentralStorageStrategy`), the legacy
      way to rescue a model built outside any device scope. Reduction then
      happens on the CPU whatever `cpu_merge` says.

    All settings train to the same weights.

    BatchNormalization: a plain `BatchNormalization` normalizes each
    replica's slice on its own, as the legacy towers did, so training
    differs from one device by about 1e-3. Pass `sync_batchnorm=True` to make
    the template's BatchNormalization layers synchronize their batch
    statistics across replicas (it sets `synchronized=True` on them, which
    is saved with the template); a run then matches one device. Moving
    statistics are averaged across replicas either way, so every replica
    holds the same values and what is saved is what was evaluated.

    Args:
        model: The template: a built `keras.Model`. Building it under
            `tf.device('/cpu:0')` is fine, as in legacy scripts.
        gpus: An int >= 2 (GPUs 0..gpus-1), a list of GPU ids, a list of
            device strings, or `None` for every GPU. On a machine without
            GPUs, GPU ids map to the logical CPU devices made by
            `parallel_keras.simulate_devices`. Defaults to None.
        cpu_merge: Reduce gradients through the CPU. Defaults to True.
        cpu_relocation: Keep the variables on the CPU. Defaults to False.
        sync_batchnorm: Synchronize BatchNormalization statistics across
            replicas. Defaults to False (the legacy behaviour).

    Returns:
        A `ParallelModel`, a `keras.Model` used like the template.

    Raises:
        TypeError: If `model` is not a Keras model, is already a parallel
            model, or `gpus` has the wrong type.
        ValueError: If the model is not built, or `gpus` asks for fewer than
            two devices or for devices that do not exist.

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
    for name, value in (
        ("cpu_merge", cpu_merge),
        ("cpu_relocation", cpu_relocation),
        ("sync_batchnorm", sync_batchnorm),
    ):
        if not isinstance(value, bool):
            raise TypeError(
                f"multi_gpu_model's `{name}` must be True or False. "
                f"Received: {name}={value!r}."
            )
    replica_devices = devices_lib.replica_devices(gpus)
    strategy = strategies.replication_strategy(
        replica_devices, cpu_merge=cpu_merge, cpu_relocation=cpu_relocation
    )

    # Everything above only validated; from here the template is changed.
    if sync_batchnorm:
        for layer in _all_layers(model):
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.synchronized = True
    _internals.relocate_variables(
        model.variables, strategy, mean_aggregated=_updated_per_replica
    )
    if getattr(model, "optimizer", None) is not None:
        parallel_model_lib.adopt_optimizer(model.optimizer, strategy)
    _internals.set_model_strategy(model, strategy)
    _internals.reset_compiled_functions(model)
    with strategy.scope():
        parallel = ParallelModel(
            model,
            strategy,
            replica_devices,
            cpu_merge=cpu_merge,
            cpu_relocation=cpu_relocation,
        )
    logging.info(
        "multi_gpu_model: %s replicated on %d devices: %s",
        model.name,
        len(replica_devices),
        ", ".join(replica_devices),
    )
    return parallel


def _all_layers(model: keras.layers.Layer):
    """Every layer inside `model`, nested models included."""
    for layer in getattr(model, "layers", []):
        yield layer
        yield from _all_layers(layer)


def _updated_per_replica(variable: keras.Variable) -> bool:
    """Non-trainable float state (moving statistics) updated on each replica.

    Such variables are assigned inside the forward pass on every replica.
    Mean-aggregating them keeps the replicas identical (a frozen layer's
    weights, never assigned, are unaffected).
    """
    return (
        not variable.trainable
        and variable.aggregation == "none"
        and keras.backend.is_float_dtype(variable.dtype)
    )
