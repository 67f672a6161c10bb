# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.optimizers` helpers and subclassing that Keras 3 dropped.

Keras 2 projects that wrote their own optimizers or optimizer mixins
imported `clip_norm` and `TFOptimizer` from `keras.optimizers` at module
level, so the whole module failed to import under Keras 3 even where the
optimizer itself was never built (avolkov1's `keras_exp.multigpu.optimizers`).

- `clip_norm(g, c, n)` computes exactly what Keras 2.2-2.3's did
  (keras/optimizers.py, checked in 2.2.4 and 2.3.1): `g * c / n` when the
  norm `n` reaches `c`, else `g`, and `g` itself when `c <= 0`. Modernise:
  pass `clipnorm=` (per variable) or `global_clipnorm=` to a
  `keras.optimizers` class.
- `TFOptimizer` wrapped a TF1 `tf.train` optimizer for Keras 2's graph-mode
  `get_updates`. Keras 3 has no wrapper of a `tf.compat.v1.train` optimizer
  and never calls `get_updates`, so no code can train with it under Keras 3:
  the class exists so that a module that imports or subclasses it still
  imports, and building one raises with the fix (use the `keras.optimizers`
  class of the same name).
- `keras2_optimizer(RMSprop)` is the base migrate gives a project's subclass
  of a Keras 2 optimizer (`class RMSPropMGPU(OptimizerMultiGPUMixin,
  RMSprop)`), whose callers pass Keras 2's arguments (`lr=`, `decay=`).
- `getargspec` is Python 3.10's `inspect.getargspec` (removed in 3.11),
  which the mixin decorators of those projects call.
"""

from __future__ import annotations

import collections
import inspect
from typing import Any

import keras
import tensorflow as tf

from parallel_keras._internals import optimizers as optimizer_internals


def clip_norm(g: Any, c: float, n: Any) -> Any:
    """Keras 2's `keras.optimizers.clip_norm`: scales `g` by `c / n` when `n >= c`.

    Args:
        g: A gradient (tensor, array or `tf.IndexedSlices`).
        c: The clipping norm; `c <= 0` means no clipping (Keras 2's
            `clipnorm=0`).
        n: The norm the gradient is measured by, usually the global norm of
            all gradients (`sqrt(sum(sum(g ** 2)))`).

    Returns:
        `g * c / n` where `n >= c`, else `g`; `g` unchanged when `c <= 0`.
        A `tf.IndexedSlices` gradient stays sparse (its values are scaled).

    Example:

    >>> import numpy as np
    >>> from parallel_keras.compat import clip_norm
    >>> np.asarray(clip_norm(np.array([3.0, 4.0]), 1.0, 5.0)).round(6).tolist()
    [0.6, 0.8]
    """
    if c <= 0:
        return g
    if isinstance(g, tf.IndexedSlices):
        values = clip_norm(g.values, c, n)
        return tf.IndexedSlices(values, g.indices, g.dense_shape)
    g = keras.ops.convert_to_tensor(g)
    n = keras.ops.cast(n, g.dtype)
    c = keras.ops.cast(c, g.dtype)
    return keras.ops.where(n >= c, g * c / n, g)


class TFOptimizer:
    """Keras 2's wrapper of a TF1 `tf.train` optimizer; importable, never trainable.

    Keras 3 has no wrapper of a `tf.compat.v1.train` optimizer, and Keras 2's
    wrapper worked through `get_updates`, a hook Keras 3 never calls. A
    module that imports or subclasses `TFOptimizer` imports as before;
    building one (or a subclass) raises `NotImplementedError` with the fix.

    Args:
        optimizer: The `tf.compat.v1.train` optimizer Keras 2 wrapped.
        *args: Whatever a subclass passes on.
        **kwargs: Whatever a subclass passes on.

    Raises:
        NotImplementedError: Always, naming the `keras.optimizers` class to use.
    """

    def __init__(self, optimizer: Any = None, *args: Any, **kwargs: Any) -> None:
        wrapped = type(optimizer).__name__ if optimizer is not None else "None"
        raise NotImplementedError(
            f"{type(self).__name__} wraps a TF1 tf.train optimizer for Keras 2's get_updates, "
            "which Keras 3 never calls, and Keras 3 has no wrapper of one. "
            f"Received: optimizer={wrapped}. Build the keras.optimizers class of the same "
            "algorithm instead (tf.compat.v1.train.AdamOptimizer(lr) -> "
            "keras.optimizers.Adam(learning_rate=lr); GradientDescentOptimizer -> SGD, "
            "MomentumOptimizer -> SGD(momentum=...), RMSPropOptimizer -> RMSprop); under "
            "parallel_keras its gradients are averaged across replicas by tf.distribute."
        )


# Keras 2.2-2.3's optimizer signatures and default learning rates
# (keras/optimizers.py; the same table as migrate's rules/optimizers.py).
_KERAS2_SIGNATURES = {
    "SGD": (("lr", 0.01), ("momentum", 0.0), ("decay", 0.0), ("nesterov", False)),
    "RMSprop": (("lr", 0.001), ("rho", 0.9), ("epsilon", None), ("decay", 0.0)),
    "Adagrad": (("lr", 0.01), ("epsilon", None), ("decay", 0.0)),
    "Adadelta": (("lr", 1.0), ("rho", 0.95), ("epsilon", None), ("decay", 0.0)),
    "Adam": (
        ("lr", 0.001),
        ("beta_1", 0.9),
        ("beta_2", 0.999),
        ("epsilon", None),
        ("decay", 0.0),
        ("amsgrad", False),
    ),
    "Adamax": (
        ("lr", 0.002),
        ("beta_1", 0.9),
        ("beta_2", 0.999),
        ("epsilon", None),
        ("decay", 0.0),
    ),
    "Nadam": (
        ("lr", 0.002),
        ("beta_1", 0.9),
        ("beta_2", 0.999),
        ("epsilon", None),
        ("schedule_decay", 0.004),
    ),
}
_KERAS2_CLASSES: dict[type, type] = {}
_NADAM_SCHEDULE_DECAY = 0.004  # Keras 2's default.
# What a keras2_optimizer's saved config puts before its name: Keras 3 reads
# any name, so plain Keras still loads the file (as its own class), and
# compat.load_model knows the class to rebuild (a Keras 3 RMSprop's config
# and a Keras 2 one's are otherwise the same).
KERAS2_MARK = "keras2_"


def _marked(name: str) -> str:
    return name if name.startswith(KERAS2_MARK) else KERAS2_MARK + name


def _unmarked(name: str) -> str:
    return name[len(KERAS2_MARK) :] if name.startswith(KERAS2_MARK) else name


def keras2_optimizer_objects(config: Any) -> dict[str, type]:
    """The custom objects that load a saved keras2_optimizer as its own class.

    Args:
        config: An optimizer's saved config, as a whole-model file holds it
            (`{"class_name": "RMSprop", "config": {"name": ..., ...}}`).

    Returns:
        `{class_name: keras2_optimizer(<Keras 3 class>)}` when `config` is a
        keras2_optimizer's (its name carries `KERAS2_MARK`), else `{}`.
    """
    if not isinstance(config, dict) or not isinstance(config.get("config"), dict):
        return {}
    class_name, name = config.get("class_name"), config["config"].get("name")
    if not isinstance(name, str) or not name.startswith(KERAS2_MARK):
        return {}
    if class_name not in _KERAS2_SIGNATURES:
        return {}
    subclass = keras2_optimizer(getattr(keras.optimizers, class_name))
    # Keras's HDF5 loader looks built-in optimizers up in lower case.
    return {class_name: subclass, class_name.lower(): subclass}


def _keras3_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Keras 2's optimizer arguments as Keras 3 takes them, with Keras 2's meaning."""
    defaults = dict(_KERAS2_SIGNATURES[name])
    learning_rate = arguments.pop("lr", None)
    if learning_rate is None:
        learning_rate = arguments.pop("learning_rate", defaults["lr"])
    arguments["learning_rate"] = learning_rate
    if "epsilon" in defaults and arguments.get("epsilon") is None:
        arguments["epsilon"] = keras.backend.epsilon()  # Keras 2's None.
    for clip in ("clipnorm", "clipvalue"):
        if clip in arguments and not arguments[clip]:
            del arguments[clip]  # Keras 2: 0 meant no clipping.
    if name == "Adagrad":
        arguments.setdefault("initial_accumulator_value", 0.0)  # Keras 2's zeros.
    return arguments


# Keras 2's update formulas, where Keras 3's differ (keras/optimizers.py,
# Keras 2.2.4 and 2.3.1, against keras/src/optimizers/*.py, Keras 3.5-3.15).
# RMSprop and Adagrad: Keras 2 divided by `sqrt(a) + epsilon`, Keras 3 by
# `sqrt(a + epsilon)` -- with small gradients the step differs by orders of
# magnitude. Nadam: Keras 2's momentum schedule is `0.96 ** (t *
# schedule_decay)`, Keras 3's `0.96 ** t`. SGD, Adam (amsgrad too), Adadelta
# and Adamax compute Keras 2's numbers already.


def _dense(gradient: Any) -> Any:
    """An embedding's sparse gradient as a dense tensor, as Keras 2's `K.square(g)` made it."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.convert_to_tensor(gradient)
    return gradient


def _rmsprop_update_step(self: Any, gradient: Any, variable: Any, learning_rate: Any) -> None:
    """Keras 2's RMSprop: `p - lr * g / (sqrt(a) + epsilon)`."""
    if self.momentum > 0 or self.centered:
        # Keras 2 had neither: Keras 3's arguments keep Keras 3's formula.
        keras.optimizers.RMSprop.update_step(self, gradient, variable, learning_rate)
        return
    ops = keras.ops
    lr = ops.cast(learning_rate, variable.dtype)
    gradient = ops.cast(_dense(gradient), variable.dtype)
    velocity = optimizer_internals.optimizer_slot(self, "velocities", variable)
    self.assign(velocity, self.rho * velocity + (1 - self.rho) * ops.square(gradient))
    self.assign_sub(variable, lr * gradient / (ops.sqrt(velocity) + self.epsilon))


def _adagrad_update_step(self: Any, gradient: Any, variable: Any, learning_rate: Any) -> None:
    """Keras 2's Adagrad: `p - lr * g / (sqrt(a) + epsilon)`."""
    ops = keras.ops
    lr = ops.cast(learning_rate, variable.dtype)
    gradient = ops.cast(_dense(gradient), variable.dtype)
    accumulator = optimizer_internals.optimizer_slot(self, "accumulators", variable)
    self.assign_add(accumulator, ops.square(gradient))
    self.assign_sub(variable, lr * gradient / (ops.sqrt(accumulator) + self.epsilon))


def _nadam_build(self: Any, var_list: list) -> None:
    """Keras 3's slots, and Keras 2's momentum-schedule product (one per variable)."""
    if self.built:
        return
    keras.optimizers.Nadam.build(self, var_list)
    # Named after their variable, as Keras 3 names its slots: the HDF5
    # writer (`model.save("m.h5")`) keys optimizer weights by name.
    self.keras2_m_schedules = [
        self.add_variable(
            shape=(),
            initializer="ones",
            dtype=var.dtype,
            name=f"{var.path.replace('/', '_')}_m_schedule",
        )
        for var in var_list
    ]


def _nadam_update_step(self: Any, gradient: Any, variable: Any, learning_rate: Any) -> None:
    """Keras 2's Nadam, its momentum schedule `0.96 ** (t * schedule_decay)`."""
    ops = keras.ops
    dtype = variable.dtype
    lr = ops.cast(learning_rate, dtype)
    gradient = ops.cast(_dense(gradient), dtype)
    beta_1 = ops.cast(self.beta_1, dtype)
    beta_2 = ops.cast(self.beta_2, dtype)
    t = ops.cast(self.iterations + 1, dtype)
    cache_t = beta_1 * (1.0 - 0.5 * ops.power(0.96, t * self.schedule_decay))
    cache_t_1 = beta_1 * (1.0 - 0.5 * ops.power(0.96, (t + 1.0) * self.schedule_decay))
    index = optimizer_internals.variable_index(self, variable)
    schedule = self.keras2_m_schedules[index]
    schedule_new = schedule * cache_t
    schedule_next = schedule_new * cache_t_1
    self.assign(schedule, schedule_new)
    m = optimizer_internals.optimizer_slot(self, "momentums", variable)
    v = optimizer_internals.optimizer_slot(self, "velocities", variable)
    self.assign(m, beta_1 * m + (1.0 - beta_1) * gradient)
    self.assign(v, beta_2 * v + (1.0 - beta_2) * ops.square(gradient))
    m_bar = (1.0 - cache_t) * gradient / (1.0 - schedule_new) + cache_t_1 * m / (
        1.0 - schedule_next
    )
    v_prime = v / (1.0 - ops.power(beta_2, t))
    self.assign_sub(variable, lr * m_bar / (ops.sqrt(v_prime) + self.epsilon))


def _keras2_time_decay(optimizer: Any) -> None:
    """Makes `optimizer` step with Keras 2's `lr / (1 + decay * iterations)`.

    Keras 2 kept `lr` a plain variable and decayed it inside each update, so
    a callback that sets the rate (`ReduceLROnPlateau`,
    `LearningRateScheduler`, `K.set_value(model.optimizer.lr, x)`) set the
    base rate and the decay went on from it. A Keras 3 schedule
    (`InverseTimeDecay`) computes the same steps but cannot be set by a
    callback (`TypeError: ... its learning rate is not settable`), so the
    decay is applied here, to the rate each update receives, and
    `optimizer.learning_rate` stays the settable base rate, as Keras 2's
    `optimizer.lr` was. `iterations` is read before Keras 3 increments it,
    as the schedule reads it. The instance's own `update_step` (a base
    class's, or Keras 2's formula) does the update.
    """
    update_step = optimizer.update_step

    def decayed_update_step(gradient: Any, variable: Any, learning_rate: Any) -> None:
        ops = keras.ops
        iterations = ops.cast(optimizer.iterations, variable.dtype)
        rate = ops.cast(learning_rate, variable.dtype) / (1.0 + optimizer.decay * iterations)
        update_step(gradient, variable, rate)

    optimizer.update_step = decayed_update_step


_KERAS2_FORMULAS: dict[str, dict[str, Any]] = {
    "RMSprop": {"update_step": _rmsprop_update_step},
    "Adagrad": {"update_step": _adagrad_update_step},
    "Nadam": {
        "build": _nadam_build,
        "update_step": _nadam_update_step,
    },
}


def keras2_optimizer(base: type) -> type:
    """A subclass of a Keras 3 optimizer class with Keras 2's arguments and numbers.

    What migrate builds a Keras 2 `RMSprop`, `Adagrad` or `Nadam` with
    (`parallel_keras.compat.keras2_optimizer(keras.optimizers.RMSprop)(
    learning_rate=0.001)`), and the base it gives a project's subclass of a
    Keras 2 optimizer (`class RMSPropMGPU(OptimizerMultiGPUMixin,
    RMSprop)`, built elsewhere with `RMSPropMGPU(lr=lr, decay=1e-6,
    gdev_list=gpus)`), whose calls migrate cannot see as the Keras
    optimizer's.

    Its `__init__` takes Keras 2's arguments, by keyword or in Keras 2's
    positional order, with Keras 2's defaults and meaning: `lr` is the
    learning rate (Keras 2's default: `Adagrad` 0.01, `Adadelta` 1.0,
    `Adamax` and `Nadam` 0.002), `decay=d` Keras 2's `lr / (1 + d *
    iterations)` applied to each update while `learning_rate` stays the
    settable base rate, as Keras 2's `optimizer.lr` was (so
    `ReduceLROnPlateau` and `LearningRateScheduler` set it and the decay
    goes on from there; a Keras 3 `InverseTimeDecay` schedule cannot be
    set), `epsilon=None` the backend epsilon, `clipnorm=0`/`clipvalue=0` no
    clipping, Nadam's `schedule_decay`; its signature names them, so code
    that reads it (a mixin decorator's `getargspec`) passes them on. Keras 3
    arguments (`learning_rate=`, `clipnorm=`, ...) pass through. Its config
    holds `decay` and Nadam's `schedule_decay`.

    Its updates are Keras 2's (keras/optimizers.py, 2.2.4 and 2.3.1) where
    Keras 3's formula differs: `RMSprop` and `Adagrad` divide by `sqrt(a) +
    epsilon` (Keras 3: `sqrt(a + epsilon)`, a different step where gradients
    are small), `Adagrad`'s accumulators start at 0 (Keras 3: 0.1), and
    `Nadam`'s momentum schedule is `0.96 ** (t * schedule_decay)` (Keras 3:
    `0.96 ** t`). `SGD`, `Adam`, `Adadelta` and `Adamax` already compute
    Keras 2's numbers. Under a `tf.distribute` strategy (`multi_gpu_model`)
    the updates apply to the all-reduced gradients, as Keras 3's do.

    Saved with its model (`model.save`, `compat.save_model`), its config's
    `name` carries the mark `keras2_`: `compat.load_model` gives back this
    class (formula, `decay`, iterations and slots), so training resumes with
    Keras 2's numbers. Plain `keras.models.load_model` reads the same file
    with Keras 3's class (it warns that it ignores `decay`); a Nadam with a
    `schedule_decay` other than Keras 2's 0.004 only with `compat.load_model`.

    Modernise: the `keras.optimizers` class with Keras 3's arguments
    (`keras.optimizers.RMSprop(learning_rate=0.001)`), knowing that RMSprop,
    Adagrad and Nadam then take slightly different steps.

    Args:
        base: A `keras.optimizers` class Keras 2 had: `SGD`, `RMSprop`,
            `Adagrad`, `Adadelta`, `Adam`, `Adamax` or `Nadam`.

    Returns:
        The subclass (one per base class).

    Raises:
        ValueError: If `base` is not one of those classes.

    Example:

    >>> import keras
    >>> from parallel_keras import compat
    >>> optimizer = compat.keras2_optimizer(keras.optimizers.SGD)(lr=0.5, momentum=0.9)
    >>> float(optimizer.learning_rate), float(optimizer.momentum)
    (0.5, 0.9)
    >>> float(compat.keras2_optimizer(keras.optimizers.Adadelta)().learning_rate)
    1.0
    """
    if base in _KERAS2_CLASSES:
        return _KERAS2_CLASSES[base]
    name = next(
        (
            known
            for known in _KERAS2_SIGNATURES
            if isinstance(base, type) and issubclass(base, getattr(keras.optimizers, known))
        ),
        None,
    )
    if name is None:
        raise ValueError(
            "keras2_optimizer takes a keras.optimizers class Keras 2 had "
            f"({', '.join(_KERAS2_SIGNATURES)}). Received: base={base!r}. Pass the "
            "keras.optimizers class the Keras 2 code subclassed."
        )
    signature = _KERAS2_SIGNATURES[name]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(signature):
            raise TypeError(
                f"Keras 2's {name} takes {len(signature)} positional arguments "
                f"({', '.join(key for key, _ in signature)}). Received: {len(args)}. "
                "Pass the others by keyword."
            )
        arguments = {key: value for (key, _), value in zip(signature, args)}
        arguments.update(kwargs)
        schedule_decay = arguments.pop("schedule_decay", _NADAM_SCHEDULE_DECAY)
        decay = float(arguments.pop("decay", 0.0) or 0.0)
        if isinstance(arguments.get("name"), str):
            arguments["name"] = _unmarked(arguments["name"])
        base.__init__(self, **_keras3_arguments(name, arguments))  # type: ignore[misc]
        if name == "Nadam":
            self.schedule_decay = schedule_decay
        self.decay = decay
        if decay:
            _keras2_time_decay(self)

    def get_config(self: Any) -> dict[str, Any]:
        config = base.get_config(self)  # type: ignore[attr-defined]
        # Plain Keras reads this config as its own class (its `decay` with a
        # warning); compat.load_model reads the name's mark and rebuilds
        # this class (`keras2_optimizer_objects`).
        config["name"] = _marked(config["name"])
        if name == "Nadam" and self.schedule_decay != _NADAM_SCHEDULE_DECAY:
            # Keras 3's Nadam takes no schedule_decay: only a value Keras 2's
            # default does not give is written.
            config["schedule_decay"] = self.schedule_decay
        if self.decay:
            config["decay"] = self.decay
        return config

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [
        inspect.Parameter(key, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
        for key, default in signature
    ]
    parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    __init__.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "__init__": __init__,
        "get_config": get_config,
        "__module__": base.__module__,
    }
    keras_class = getattr(keras.optimizers, name)
    if getattr(base, "update_step", None) is keras_class.update_step:
        # A base with its own update_step keeps it.
        namespace.update(_KERAS2_FORMULAS.get(name, {}))
    subclass = type(base.__name__, (base,), namespace)
    subclass.__qualname__ = base.__qualname__
    _KERAS2_CLASSES[base] = subclass
    return subclass


ArgSpec = collections.namedtuple("ArgSpec", ["args", "varargs", "keywords", "defaults"])


def getargspec(function: Any) -> ArgSpec:
    """Python 3.10's `inspect.getargspec`, removed in Python 3.11.

    The same `ArgSpec(args, varargs, keywords, defaults)` (Keras 2-era
    decorators read `.keywords`); keyword-only parameters and annotations
    raise `ValueError`, as the original did. Modernise:
    `inspect.getfullargspec(function)` (`.varkw` for `.keywords`) or
    `inspect.signature(function)`.

    Args:
        function: The function (or method) to describe.

    Returns:
        Its `ArgSpec`.

    Raises:
        ValueError: If the function has keyword-only parameters or annotations.

    Example:

    >>> from parallel_keras import compat
    >>> def f(a, b=1, **kwargs): pass
    >>> compat.getargspec(f)
    ArgSpec(args=['a', 'b'], varargs=None, keywords='kwargs', defaults=(1,))
    """
    spec = inspect.getfullargspec(function)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError(
            "Function has keyword-only parameters or annotations, use "
            "inspect.signature() API which can support them"
        )
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)
