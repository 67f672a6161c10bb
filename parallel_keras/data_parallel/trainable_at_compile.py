# SPDX-License-Identifier: Apache-2.0
"""Keras 2's rule for `trainable`: the set of weights a model trains is fixed
when it is compiled.

Keras 2 (keras/engine/training.py, 2.3) collected `model.trainable_weights`
in `compile` (`_collected_trainable_weights`) and built its optimizer updates
for exactly those; setting `layer.trainable` afterwards changed nothing until
the next `compile`, and each train call warned once: "Discrepancy between
trainable weights and collected trainable weights, did you set
`model.trainable` without calling `model.compile` after ?". The legacy GAN
loop relies on it: `D` compiled, `D.trainable = False`, the combined
`G -> D` model compiled; then `D` trains in its own steps and only `G` in the
combined ones. Keras 3 reads `trainable` at each step, so that loop would
never train `D`.

The parallel model owns its compile and steps, so it keeps Keras 2's rules,
for the weights trained and for frozen BatchNormalization layers
(`keras2_batchnorm`):
`TrainableAtCompile` holds the weights trainable at compile, the step
differentiates and updates those, and the optimizer is built for them. The
Keras 3 idiom (set `trainable` before each step, matching what each model
was compiled with) gives the same sets and trains the same way.

Why frozen BatchNormalization flags are set around each train call
(`with_keras2_batchnorm`) and not once at `multi_gpu_model` or `compile`:
the flags are the template's own and the template stays a Keras 3 model
between the parallel model's calls. Left set, the user's `template.fit`,
`template(x, training=True)` and callbacks would run the frozen layer in
training mode, `template.trainable_weights` would gain its gamma and beta,
and `template.save` would write `trainable: true` into the file's config
(`tests/test_template_adoption.py::
test_a_frozen_batchnorm_is_keras3s_on_the_template_between_parallel_steps`).
Keras 3's BatchNormalization takes batch statistics only when
`training and self.trainable` (layers/normalization/batch_normalization.py,
3.5-3.15), so no argument of the call can ask for it, and the replicas trace
concurrently, so the flags are set before their threads start. Setting them
costs a few attribute writes per call (the flags matter only when the call
traces).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import keras

from parallel_keras import _internals
from parallel_keras._internals import layers as layer_internals

DISCREPANCY_WARNING = (
    "Discrepancy between trainable weights and collected trainable weights, "
    "did you set `model.trainable` without calling `model.compile` after ? "
    "(As in Keras 2, the parallel model {name!r} trains the {count} weights "
    "that were trainable when it was compiled; compile it again to train the "
    "{now} trainable now.)"
)


class TrainableAtCompile:
    """The weights a compiled model trains, as Keras 2 collected them.

    Args:
        model: The model being compiled; its `trainable_weights` now are
            the ones it trains until it is compiled again.
    """

    def __init__(self, model: keras.Model):
        self.model_name = model.name
        self.variables = list(model.trainable_weights)
        self._ids = [id(variable) for variable in self.variables]
        self._warned = False

    def check(self, model: keras.Model, always: bool = False) -> None:
        """Warns if the model's trainable weights changed since compile: once
        for the train calls, or at each call with `always` (`summary`, which
        Keras 2's `print_summary` checked every time)."""
        if self._warned and not always:
            return
        now = model.trainable_weights
        if [id(variable) for variable in now] == self._ids:
            return
        self._warned = self._warned or not always
        message = DISCREPANCY_WARNING.format(
            name=self.model_name, count=len(self.variables), now=len(now)
        )
        warnings.warn(message, UserWarning, stacklevel=3)

    def build_optimizer(self, optimizer) -> None:
        """Builds an unbuilt optimizer for the weights trained (as Keras 2's
        updates were built for the collected weights)."""
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.variables)


def check_optimizer_covers_weights(model: keras.Model, optimizer) -> None:
    """Raises if a built optimizer has no state for weights `model` would train.

    Keras 2 created an optimizer's slots for whatever weights each model
    collected, so one optimizer could serve two models (a GAN's D and
    combined models). A Keras 3 optimizer holds state only for the weights it
    was built with and refuses any other ("Unknown variable").
    """
    if not isinstance(optimizer, keras.optimizers.Optimizer) or not optimizer.built:
        return
    built = {id(variable) for variable in _internals.optimizer_built_variables(optimizer)}
    missing = [v.path for v in model.trainable_weights if id(v) not in built]
    if missing:
        raise ValueError(
            "An optimizer that already has state can only train the weights "
            "it was built for (Keras 3 keeps no state for others, where Keras "
            "2 made it for each model). Received: "
            f"optimizer={type(optimizer).__name__} built for "
            f"{len(built)} weights, none of them {missing[:3]}"
            f"{' ...' if len(missing) > 3 else ''}, which "
            f"{model.name!r} trains. Pass this model its own optimizer, e.g. "
            f"compile(optimizer=keras.optimizers.{type(optimizer).__name__}"
            "(...)), or the optimizer it was compiled with before."
        )


def with_keras2_batchnorm(train_function, template: keras.Model):
    """`train_function` run inside `keras2_batchnorm(template)` (unchanged
    for a template without BatchNormalization: nothing to do per step)."""
    chains = _batchnorm_chains(template, (template,))
    if not chains:
        return train_function

    def run(data):
        # Set here, before the replicas' threads start, so that all of them
        # trace the same layers in the same state.
        with keras2_batchnorm(template, chains):
            return train_function(data)

    return run


@contextlib.contextmanager
def keras2_batchnorm(model: keras.Model, chains=None) -> Iterator[None]:
    """Runs frozen BatchNormalization layers in training as Keras 2 did.

    Keras 2.3's BatchNormalization (layers/normalization.py) normalized with
    the batch's statistics whenever the learning phase was training, frozen
    or not, and its moving statistics were updated only if the layer and
    every model containing it were trainable when the train function was
    built (`Layer.updates` and `Network.updates` are empty for a frozen
    one). Keras 3 runs a frozen BatchNormalization in inference mode. For
    the duration of a train function call (traced on its first call, as
    Keras 2 built its train function) each such layer is made trainable,
    with momentum 1 where Keras 2 would not have updated its moving
    statistics (`moving * 1 + batch * 0` leaves them exactly as they were).

    Args:
        model: The model whose BatchNormalization layers run.
        chains: `_batchnorm_chains(model, (model,))`, if already known.
    """
    changed = []
    seen = set()
    for layer, enclosing in chains or _batchnorm_chains(model, (model,)):
        if id(layer) in seen:
            continue  # A layer shared by nested models: its first path decides.
        seen.add(id(layer))
        updated = layer.trainable and all(outer.trainable for outer in enclosing)
        if updated:
            continue
        changed.append((layer, layer.trainable, layer.momentum))
        layer.momentum = 1.0
        if not layer.trainable:
            layer.trainable = True
    try:
        yield
    finally:
        for layer, trainable, momentum in changed:
            layer.momentum = momentum
            if layer.trainable != trainable:
                layer.trainable = trainable


def _batchnorm_chains(layer, enclosing: tuple) -> list:
    """(BatchNormalization layer, the layers enclosing it) for every one
    inside `layer`."""
    chains = []
    for child in layer_internals.child_layers(layer):
        if isinstance(child, keras.layers.BatchNormalization):
            chains.append((child, enclosing))
        else:
            chains.extend(_batchnorm_chains(child, (*enclosing, child)))
    return chains
