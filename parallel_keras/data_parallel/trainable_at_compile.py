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

The parallel model owns its compile and steps, so it keeps Keras 2's rule:
`TrainableAtCompile` holds the weights trainable at compile, the step
differentiates and updates those, and the optimizer is built for them. The
Keras 3 idiom (set `trainable` before each step, matching what each model
was compiled with) gives the same sets and trains the same way.
"""

from __future__ import annotations

import warnings

import keras

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

    def check(self, model: keras.Model) -> None:
        """Warns once if the model's trainable weights changed since compile."""
        if self._warned:
            return
        now = model.trainable_weights
        if [id(variable) for variable in now] == self._ids:
            return
        self._warned = True
        message = DISCREPANCY_WARNING.format(
            name=self.model_name, count=len(self.variables), now=len(now)
        )
        warnings.warn(message, UserWarning, stacklevel=3)

    def build_optimizer(self, optimizer) -> None:
        """Builds an unbuilt optimizer for the weights trained (as Keras 2's
        updates were built for the collected weights)."""
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.variables)
