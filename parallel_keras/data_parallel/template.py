# SPDX-License-Identifier: Apache-2.0
"""The template after wrapping: its own methods, one device's results.

`multi_gpu_model` moves the template's variables into the replication
strategy, so the template can no longer run on one device by itself. Its
methods are replaced on the instance (its class, and so its saved config,
stay the user's): `fit`, `evaluate` and `predict` prepare their datasets with
every batch given whole to every replica, the `*_on_batch` methods go through
`Execution`, the steps report each row once, and `load_weights` is all or
nothing. Every replica computing the whole batch gives exactly one device's
BatchNormalization statistics, stateful RNN states and batch-dependent
losses: the template's methods return what they returned before wrapping.
"""

from __future__ import annotations

import functools

import keras
import tensorflow as tf

from parallel_keras._internals import captured_strategy, compiled_functions, symbolic_build
from parallel_keras.data_parallel import execution as execution_lib
from parallel_keras.data_parallel import steps, strategies


def all_layers(model: keras.layers.Layer):
    """Every layer inside `model`, nested models included."""
    for layer in getattr(model, "layers", []):
        yield layer
        yield from all_layers(layer)


def reset_states(model: keras.Model) -> None:
    """Resets the state of every stateful layer in `model`, on every replica."""
    for layer in all_layers(model):
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_state"):
            layer.reset_state()


_TEMPLATE_METHODS = (
    "fit",
    "evaluate",
    "predict",
    "train_on_batch",
    "test_on_batch",
    "predict_on_batch",
    "train_step",
    "test_step",
    "predict_step",
    "reset_states",
    "load_weights",
)


def attach_template(
    template: keras.Model,
    strategy: tf.distribute.Strategy,
    stateful_batch: int | None,
) -> execution_lib.Execution:
    """Makes the template's own methods run on `strategy` with one device's results."""
    detach_template(template)
    execution = execution_lib.Execution(
        template, strategy, replicate_all=True, stateful_batch=stateful_batch
    )
    model_class = type(template)

    uses_keras_train_step = compiled_functions.is_keras_default_step(model_class, "train_step")

    def adopt() -> None:
        if getattr(template, "optimizer", None) is not None:
            strategies.adopt_optimizer(template.optimizer, strategy)
            if uses_keras_train_step:  # then it trains in `steps.train_step`
                steps.set_up_optimizer(template.optimizer)

    def entry(name):
        method = getattr(model_class, name)

        @functools.wraps(method)
        def run(*args, **kwargs):
            adopt()
            with execution.running():
                return method(template, *args, **kwargs)

        return run

    def train_on_batch(x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        adopt()
        return execution.train_on_batch(x, y, sample_weight, class_weight, return_dict)

    def test_on_batch(x, y=None, sample_weight=None, return_dict=False):
        return execution.test_on_batch(x, y, sample_weight, return_dict)

    def custom_step(name):
        method = getattr(model_class, name)

        def step(data):
            return method(template, execution_lib.select_keras_batch(data))

        return step

    default_steps = {
        "train_step": lambda data: steps.train_step(template, data),
        "test_step": lambda data: steps.test_step(template, data),
        "predict_step": lambda data: steps.predict_step(template, data),
    }
    overrides = {name: entry(name) for name in ("fit", "evaluate", "predict")}
    overrides["train_on_batch"] = train_on_batch
    overrides["test_on_batch"] = test_on_batch
    overrides["predict_on_batch"] = execution.predict_on_batch

    def load_weights(filepath, skip_mismatch=False, **kwargs):
        """All or nothing, like the parallel model's (Keras's stops half-way)."""
        from parallel_keras.saving import weights

        weights.load_weights(
            template,
            filepath,
            by_name=kwargs.pop("by_name", False),
            skip_mismatch=skip_mismatch,
            **kwargs,
        )

    overrides["load_weights"] = load_weights
    if not hasattr(model_class, "reset_states"):
        # Keras 2's Model.reset_states, which legacy stateful scripts call.
        overrides["reset_states"] = lambda: reset_states(template)
    for name, default in default_steps.items():
        uses_keras_step = compiled_functions.is_keras_default_step(model_class, name)
        overrides[name] = default if uses_keras_step else custom_step(name)
    # interception: the template's methods (instance __dict__), its symbolic
    # build and captured strategy, at multi_gpu_model (`template_adoption`).
    template.__dict__.update(overrides)
    symbolic_build.install_symbolic_build(template, execution_lib.select_keras_batch)
    captured_strategy.set_model_strategy(template, strategy)
    compiled_functions.reset_compiled_functions(template)
    return execution


def detach_template(template: keras.Model) -> None:
    """Undoes `attach_template` (the methods of the template's class again)."""
    for name in _TEMPLATE_METHODS:
        template.__dict__.pop(name, None)
    symbolic_build.remove_symbolic_build(template)
