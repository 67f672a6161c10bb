# SPDX-License-Identifier: Apache-2.0
"""Every change `multi_gpu_model` makes to the user's template, made in one
place and recorded, so that it can be undone.

`adopt_template` is the one entry that changes the template, its layers and
its optimizer when `multi_gpu_model` wraps it:

1. BatchNormalization layers synchronized across replicas (`sync_batchnorm`).
2. The template's variables, and a stateful RNN's states, moved into the
   replication strategy (`_internals.variables.relocate_variables`):
   moving statistics averaged across replicas, RNN states kept per replica.
   Layers' own seed generators (Dropout, GaussianNoise) draw per replica
   (`_internals.seed_generators.replicate_seed_generators`); a layer added
   to the template later is adopted at the next run
   (`TemplateAdoption.adopt_added_layers`).
3. An optimizer the template was compiled with adopted
   (`strategies.adopt_optimizer`).
4. The template's own methods run on the strategy with one device's results
   (`template.attach_template`: `fit` & co. on the instance, its symbolic
   build, the strategy it captured).

The parallel model's `compile` adopts its optimizer and sets up its clipping
(`ParallelModel.compile`, `steps.set_up_optimizer`); `TemplateAdoption.undo`
hands that optimizer back too when it is the template's. What runs at each
`fit` (Python data read per step, the strategy's batch preparation) is
listed in `parallel_model.py`'s "How `fit` runs".
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import captured_strategy, compiled_functions, seed_generators
from parallel_keras._internals import optimizers as optimizer_internals
from parallel_keras.data_parallel import execution as execution_lib
from parallel_keras.data_parallel import strategies
from parallel_keras.data_parallel import template as template_lib


@dataclasses.dataclass(eq=False)
class TemplateAdoption:
    """What `adopt_template` changed; `undo()` changes it back."""

    template: keras.Model
    strategy: tf.distribute.Strategy
    execution: execution_lib.Execution
    """Runs the template's own methods on the strategy."""
    synchronized_batchnorm: list[tuple[keras.layers.Layer, bool]]
    """Each BatchNormalization layer `sync_batchnorm` set, and its flag before."""
    relocated: list[tuple[keras.Variable, tuple[str, str] | None]]
    """Each variable moved into the strategy, with its `(aggregation,
    synchronization)` before where the move changed them."""
    strategy_before: tf.distribute.Strategy | None
    """The strategy Keras captured when the template was constructed."""
    seed_generators: list[keras.random.SeedGenerator] = dataclasses.field(default_factory=list)
    """The layers' own seed generators made to draw per replica (their state
    variables are in `relocated`)."""

    def adopt_added_layers(self) -> None:
        """Adopts the seed generators of layers added to the template since
        (a `Sequential.add` after `multi_gpu_model`): each replica draws its
        own noise there too, and `undo` gives them back. Run before each
        `fit`/`evaluate`/`predict`/`*_on_batch`; usually finds none."""
        added = seed_generators.layer_seed_generators(self.template)
        if not added:
            return
        # interception: the added layers' SeedGenerator.next and state, at
        # the first run after they were added.
        before = [_kind(generator.state) for generator in added]
        seed_generators.replicate_seed_generators(added, self.strategy)
        self.seed_generators.extend(added)
        self.relocated.extend((generator.state, kind) for generator, kind in zip(added, before))

    def undo(self) -> None:
        """Gives the template back as a plain Keras model on one device.

        Its variables (values kept), its optimizer's, its methods, its
        layers' flags and the strategy it captured are as before
        `multi_gpu_model`; a parallel model over it refuses to run
        (`ParallelModel._ensure_current`). Call it outside any strategy scope.
        """
        template = self.template
        template_lib.detach_template(template)
        captured_strategy.set_model_strategy(template, self.strategy_before)
        compiled_functions.reset_compiled_functions(template)
        seed_generators.restore_seed_generators(self.seed_generators)
        for layer, synchronized in self.synchronized_batchnorm:
            layer.synchronized = synchronized
        one_device = tf.distribute.get_strategy()
        before = {id(variable): wanted for variable, wanted in self.relocated}
        _internals.relocate_variables(
            [variable for variable, _ in self.relocated],
            one_device,
            synchronize=lambda variable: before[id(variable)],
        )
        optimizer = getattr(template, "optimizer", None)
        if optimizer is not None:
            _internals.relocate_variables(optimizer.variables, one_device)
            captured_strategy.set_optimizer_strategy(optimizer, one_device)
            _internals.rekey_optimizer_variables(optimizer)
            optimizer_internals.restore_clip(optimizer)


def adopt_template(
    template: keras.Model,
    strategy: tf.distribute.Strategy,
    stateful_batch: int | None,
    sync_batchnorm: bool,
) -> TemplateAdoption:
    """Makes `template` train on `strategy`'s replicas; returns what changed."""
    # interception: BatchNormalization.synchronized, the variables' tf.Variable,
    # the optimizer's strategy and the template's methods, at multi_gpu_model.
    synchronized = []
    if sync_batchnorm:
        for layer in template_lib.all_layers(template):
            if isinstance(layer, keras.layers.BatchNormalization):
                synchronized.append((layer, layer.synchronized))
                layer.synchronized = True
    states = rnn_states(template)
    moved = [*template.variables, *states]
    before = [_kind(variable) for variable in moved]
    strategy_before = captured_strategy.model_strategy(template)
    _internals.relocate_variables(template.variables, strategy, synchronize=_synchronization)
    _internals.relocate_variables(
        states, strategy, synchronize=lambda _: ("only_first_replica", "on_read")
    )
    # interception: the layers' SeedGenerator.next (instance) and state
    # variables: Dropout, GaussianNoise draw per replica.
    generators = seed_generators.layer_seed_generators(template)
    seed_generators.replicate_seed_generators(generators, strategy)
    relocated = [
        (variable, kind if _kind(variable) != kind else None)
        for variable, kind in zip(moved, before)
    ]
    if getattr(template, "optimizer", None) is not None:
        strategies.adopt_optimizer(template.optimizer, strategy)
    execution = template_lib.attach_template(template, strategy, stateful_batch)
    adoption = TemplateAdoption(
        template, strategy, execution, synchronized, relocated, strategy_before, generators
    )
    execution.adopt_added_layers = adoption.adopt_added_layers
    return adoption


def _kind(variable: keras.Variable) -> tuple[str, str]:
    return variable.aggregation or "none", _internals.variable_synchronization(variable)


def rnn_states(model: keras.Model) -> list[keras.Variable]:
    """The states of the stateful RNN layers in `model`."""
    return [
        state
        for layer in template_lib.all_layers(model)
        for state in _internals.rnn_state_variables(layer)
    ]


def _synchronization(variable: keras.Variable) -> tuple[str, str] | None:
    """MEAN aggregation for non-trainable float state updated on each replica.

    Such variables (moving statistics) are assigned inside the forward pass
    on every replica. Mean-aggregating them keeps the replicas identical.
    A frozen layer's weights are weights all the same (they train again
    when the layer is unfrozen): what counts is how a variable was created.
    """
    if (
        not _internals.created_trainable(variable)
        and variable.aggregation in ("none", "mean")
        and keras.backend.is_float_dtype(variable.dtype)
    ):
        return "mean", _internals.variable_synchronization(variable)
    return None
