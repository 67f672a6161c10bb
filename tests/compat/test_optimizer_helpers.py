# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.optimizers.clip_norm` and `TFOptimizer` imports, migrated and run."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from parallel_keras import compat, migrate

# A Keras 2 optimizer module in the shape of avolkov1's keras_exp.multigpu.optimizers:
# the helpers are imported at module level, TFOptimizer is subclassed, and
# clip_norm clips the gradients by their global norm.
OPTIMIZER_MODULE = """\
from keras import backend as K
from keras.optimizers import clip_norm, Optimizer, TFOptimizer, RMSprop


class TFOptimizerMGPU(TFOptimizer):
    def __init__(self, optimizer, gdev_list=None):
        TFOptimizer.__init__(self, optimizer)
        self._gdev_list = gdev_list


def clipped(grads, clipnorm):
    norm = K.sqrt(sum([K.sum(K.square(g)) for g in grads]))
    return [clip_norm(g, clipnorm, norm) for g in grads]


base_is_optimizer = issubclass(RMSprop, Optimizer)
"""


def _keras2_clip_norm(g, c, n):
    """Keras 2.2.4's clip_norm written out: g * c / n where n >= c."""
    return g if c <= 0 else (g * c / n if n >= c else g)


def _migrated_module():
    result = migrate.migrate_source(OPTIMIZER_MODULE, "optimizers.py")
    assert "from parallel_keras.compat import clip_norm, TFOptimizer" in result.migrated
    namespace: dict = {"__name__": "migrated_optimizers"}
    exec(compile(result.migrated, "optimizers.py", "exec"), namespace)  # noqa: S102
    return result, namespace


def test_module_importing_clip_norm_and_tfoptimizer_imports_once_migrated():
    result, namespace = _migrated_module()
    assert namespace["base_is_optimizer"] is True
    assert namespace["clip_norm"] is compat.clip_norm
    # clip_norm runs through a compatibility path; TFOptimizer stays a flag.
    assert any("clip_norm" in change.message and change.modern for change in result.report.changes)
    assert [flag.message for flag in result.report.flags if "TFOptimizer" in flag.message]


@pytest.mark.parametrize("clipnorm", [0.0, 1.0, 4.0, 100.0])
def test_migrated_clip_norm_gives_keras2_numbers(clipnorm):
    _, namespace = _migrated_module()
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=(3, 2)).astype("float32"), rng.normal(size=(2,)).astype("float32")]
    norm = float(np.sqrt(sum(np.sum(g**2) for g in grads)))
    got = namespace["clipped"]([tf.constant(g) for g in grads], clipnorm)
    for g, clipped in zip(grads, got):
        np.testing.assert_allclose(
            np.asarray(clipped), _keras2_clip_norm(g, clipnorm, norm), rtol=1e-6
        )


def test_clip_norm_keeps_indexed_slices_sparse():
    sparse = tf.IndexedSlices(
        tf.constant([[3.0, 4.0]]), tf.constant([1], dtype=tf.int64), tf.constant([3, 2], tf.int64)
    )
    clipped = compat.clip_norm(sparse, 1.0, tf.constant(5.0))
    assert isinstance(clipped, tf.IndexedSlices)
    np.testing.assert_allclose(clipped.values.numpy(), [[0.6, 0.8]], rtol=1e-6)
    np.testing.assert_array_equal(clipped.indices.numpy(), [1])


def test_building_a_tfoptimizer_subclass_raises_with_the_keras3_class_to_use():
    _, namespace = _migrated_module()
    with pytest.raises(NotImplementedError, match=r"TFOptimizerMGPU .*keras\.optimizers\.Adam"):
        namespace["TFOptimizerMGPU"](tf.compat.v1.train.AdamOptimizer(0.1), gdev_list=["/gpu:0"])
