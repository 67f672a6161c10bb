# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `ModelMGPU` idiom: a `Model` subclass adopting the parallel model.

A very common Keras 2 wrapper (keras-team/keras#2436, #8123) makes the
parallel model save its template:

    class ModelMGPU(Model):
        def __init__(self, ser_model, gpus):
            pmodel = multi_gpu_model(ser_model, gpus)
            self.__dict__.update(pmodel.__dict__)
            self._smodel = ser_model
        def __getattribute__(self, attrname):
            if 'load' in attrname or 'save' in attrname:
                return getattr(self._smodel, attrname)
            return super(ModelMGPU, self).__getattribute__(attrname)

In Keras 2 the copied `__dict__` was the whole parallel graph, so the
wrapper trained as the parallel model. In Keras 3 behaviour lives in the
class (`call`, `train_step`, ...), so a `keras.Model` subclass holding a
copied `__dict__` has no `call` and fails at `fit`. `multi_gpu_model`
therefore adopts the wrapper it is called for while that wrapper is being
constructed and not yet initialized by Keras (Keras's `Layer.__init__` sets
`built`): it makes that instance's class a subclass of both the user's
class and `ParallelModel`. The adopted `__dict__` then makes the wrapper a
second parallel model over the same template, as in Keras 2: its own
compile state, the template's variables, and the user's `__getattribute__`
still sending `save*`/`load*` to the serial model.

Which instance is a wrapper under construction is known from its class,
not from the caller's frame: `wrapper_classes.py` recognizes, as each
`keras.Model` subclass is defined, one whose own `__init__` names
`multi_gpu_model`, and marks the instance (a context variable) while that
`__init__` runs. Why not without any hook:

- Keras 3 finds `call`, `train_step`, `compile`, `fit` on the class, and
  the copied `__dict__` carries only instance attributes. Putting the
  parallel model's bound methods in its `__dict__` would make the wrapper
  forward to the parallel model, but a legacy script reads state off the
  wrapper (`model.optimizer` to change its learning rate, `history`,
  `metrics_names`, `stop_training`), which would be stale copies taken at
  the wrapper's `__init__`.
- Of what the copied `__dict__` holds, Keras calls nothing parallel_keras
  owns with the wrapper at its first `compile` or `fit`: `compile` calls
  its own `_resolve_auto_jit_compile` and `_flatten_layers`; `fit` calls the
  strategy's `scope()` and `experimental_distribute_dataset(dataset)` (the
  strategy is parallel_keras's, the model is not passed), then its own
  `_maybe_symbolic_build`, which fails for want of `call`. So nothing learns
  which instance runs in time to adopt it.

The class hook (`keras.Model.__init_subclass__`, added at `import keras`)
acts on no class whose `__init__` does not name `multi_gpu_model`. The
class swap is recorded (`WrapperAdoption`, held by the wrapper as
`_wrapper_adoption`) and `undo()` gives the instance its class back; a model
that calls `super().__init__()` without having adopted the `__dict__` (it
holds the parallel model) is undone that way before Keras initializes it.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import keras
from absl import logging

from parallel_keras.data_parallel import parallel_model as parallel_model_lib
from parallel_keras.data_parallel import wrapper_classes


class _Adopted:
    """What an adopting wrapper needs beyond `ParallelModel`'s methods."""

    def __init__(self, *args, **kwargs):
        # `super().__init__()` in the user's `__init__` resolves here. After
        # adopting the `__dict__` (some wrappers do that) it must not reset
        # what was adopted. Without it, the model only held the parallel
        # model: undo, and let Keras initialize it as the user's class.
        if "_template" in vars(self):
            return
        record: WrapperAdoption = vars(self)["_wrapper_adoption"]
        record.undo()
        # Now an instance of the user's class (typed as such for `super`).
        instance: Any = self
        user_class: type[Any] = record.user_class
        super(user_class, instance).__init__(*args, **kwargs)

    @property
    def _execution(self):
        # The copied `__dict__` holds the parallel model's `Execution`, which
        # runs *that* model's batches; give the wrapper its own.
        execution = vars(self)["_execution"]
        if execution.model is not self:
            execution = type(execution)(
                self,
                execution.strategy,
                replicate_all=execution.replicate_all,
                stateful_batch=execution.stateful_batch,
            )
            execution.adopt_added_layers = vars(self)["_execution"].adopt_added_layers
            vars(self)["_execution"] = execution
        return execution

    @_execution.setter
    def _execution(self, value) -> None:
        vars(self)["_execution"] = value


_ADOPTED_CLASSES: dict[type, type] = {}


def _adopted_class(cls: type) -> type:
    """`cls` (the user's wrapper class) that is also a `ParallelModel`; one
    per wrapper class, named as it, so `repr`, `isinstance` and errors read
    as the user's class."""
    if cls not in _ADOPTED_CLASSES:
        _ADOPTED_CLASSES[cls] = types.new_class(
            cls.__name__,
            (cls, _Adopted, parallel_model_lib.ParallelModel),
            exec_body=lambda namespace: namespace.update(
                __module__=cls.__module__, __qualname__=cls.__qualname__
            ),
        )
    return _ADOPTED_CLASSES[cls]


@dataclasses.dataclass(frozen=True)
class WrapperAdoption:
    """A wrapper `adopt_constructing_wrapper` made a `ParallelModel`; the
    wrapper holds it as `_wrapper_adoption` until `undo()`."""

    wrapper: keras.Model
    user_class: type
    """The wrapper's class before, the one the user defined."""

    def undo(self) -> None:
        """Gives the wrapper its own class back (no `ParallelModel` methods)."""
        vars(self.wrapper).pop("_wrapper_adoption", None)
        self.wrapper.__class__ = self.user_class


def adopt_constructing_wrapper() -> WrapperAdoption | None:
    """Makes the wrapper under construction a `ParallelModel` subclass.

    The instance is `wrapper_classes.constructing_wrapper()`: the one whose
    wrapper `__init__` (a `keras.Model` subclass's that names
    `multi_gpu_model`) runs now. Does nothing unless Keras has not yet
    initialized it (the `ModelMGPU` idiom); a model that called
    `super().__init__()` first holds the parallel model as an attribute,
    and is left alone.

    Returns:
        What was changed, or None if nothing was.
    """
    instance = wrapper_classes.constructing_wrapper()
    if (
        not isinstance(instance, keras.Model)
        or isinstance(instance, parallel_model_lib.ParallelModel)
        or "built" in vars(instance)
    ):
        return None
    cls = type(instance)
    try:
        instance.__class__ = _adopted_class(cls)
    except TypeError as error:  # An incompatible MRO or layout: Keras's own error later.
        logging.warning(
            "multi_gpu_model: %s adopts the parallel model's __dict__ but cannot "
            "also be a ParallelModel (%s); use the parallel model directly.",
            cls.__name__,
            error,
        )
        return None
    logging.info(
        "multi_gpu_model: %s adopts the parallel model (Keras 2's ModelMGPU "
        "idiom); it trains as the parallel model.",
        cls.__name__,
    )
    record = WrapperAdoption(instance, cls)
    # Not Keras's `__setattr__`: Keras has not initialized the instance.
    vars(instance)["_wrapper_adoption"] = record
    return record
