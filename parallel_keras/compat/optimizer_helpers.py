# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.optimizers` helpers that Keras 3 dropped.

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
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


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
