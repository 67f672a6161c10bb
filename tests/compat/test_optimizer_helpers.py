# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.optimizers.clip_norm` and `TFOptimizer` imports, migrated and run."""

from __future__ import annotations

import keras
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


# avolkov1's synchronous multi-GPU optimizers, in small: a mixin overriding
# Keras 2's get_updates to average per-GPU gradients, mixed into SGD by a
# decorator that reads each base's __init__ with inspect.getargspec.
# (SGD: Keras 3's RMSprop adds epsilon under the square root, Keras 2's after it.)
MIXIN_OPTIMIZER = """\
import inspect

import numpy as np
import tensorflow as tf
from keras.layers import Dense, Input
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import multi_gpu_model


def mixedomatic(cls):
    def __init__(self, **kwargs):
        for base in reversed(cls.__bases__):
            spec = inspect.getargspec(base.__init__)
            base.__init__(self, **{k: kwargs[k] for k in spec.args if k in kwargs})
    cls.__init__ = __init__
    return cls


class OptimizerMultiGPUMixin(object):
    def __init__(self, gdev_list=None):
        self._gdev_list = gdev_list

    @property
    def ismgpu(self):
        return True

    def get_updates(self, loss, params):
        tower_grads = []
        for device in self._gdev_list:
            with tf.device(device):
                tower_grads.append(tf.gradients(loss, params))
        return tower_grads


@mixedomatic
class SgdMGPU(OptimizerMultiGPUMixin, SGD):
    pass


inputs = Input((4,))
model = Model(inputs, Dense(3)(inputs))
initial = model.get_weights()
opt = SgdMGPU(lr=0.1, momentum=0.9, decay=0.1, gdev_list=['/gpu:%d' % i for i in range(GPUS)])
parallel = multi_gpu_model(model, gpus=GPUS) if GPUS > 1 else model
parallel.compile(optimizer=opt, loss='mse')
rng = np.random.RandomState(0)
x, y = rng.rand(32, 4).astype('float32'), rng.rand(32, 3).astype('float32')
parallel.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
"""


def _keras2_sgd_by_hand(initial, x, y, lr=0.1, momentum=0.9, decay=0.1, steps_per_epoch=2):
    """Keras 2.2.4's SGD step written out (lr / (1 + decay * iterations), momentum)."""
    weights = [w.astype("float64") for w in initial]
    moments = [np.zeros_like(w) for w in weights]
    iterations = 0
    for _ in range(2):
        for step in range(steps_per_epoch):
            rows = slice(16 * step, 16 * step + 16)
            prediction = x[rows] @ weights[0] + weights[1]
            error = 2 * (prediction - y[rows]) / (16 * 3)
            gradients = [x[rows].T @ error, error.sum(axis=0)]
            rate = lr / (1 + decay * iterations)
            for i, gradient in enumerate(gradients):
                moments[i] = momentum * moments[i] - rate * gradient
                weights[i] = weights[i] + moments[i]
            iterations += 1
    return weights


@pytest.mark.parametrize("gpus", [1, 4])
def test_multi_gpu_optimizer_mixin_trains_as_its_keras2_base(gpus):
    result = migrate.migrate_source(MIXIN_OPTIMIZER, "optimizers.py")
    # The lengthened class header keeps within PEP 8's line, bases on their own line.
    assert (
        "class SgdMGPU(\n    OptimizerMultiGPUMixin, parallel_keras.compat.keras2_optimizer(SGD)\n):"
    ) in result.migrated
    assert migrate.migrate_source(result.migrated, "optimizers.py").migrated == result.migrated
    assert "parallel_keras.compat.getargspec(" in result.migrated
    assert not [flag for flag in result.report.flags if flag.rule == "optimizer subclasses"]
    namespace = {"GPUS": gpus, "__name__": "migrated_mixin"}
    exec(compile(result.migrated, "optimizers.py", "exec"), namespace)  # noqa: S102
    assert namespace["opt"].ismgpu is True  # The mixin's own attributes are kept.
    x, y = namespace["x"], namespace["y"]
    expected = _keras2_sgd_by_hand(namespace["initial"], x, y)
    for got, want in zip(namespace["model"].get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_optimizer_subclass_with_other_get_updates_is_flagged():
    source = (
        "from keras.optimizers import Adam\n\n\n"
        "class AdamW(Adam):\n"
        "    def get_updates(self, loss, params):\n"
        "        return [p * 0.99 for p in params]\n"
    )
    result = migrate.migrate_source(source, "adamw.py")
    assert "keras2_optimizer" not in result.migrated
    assert [flag.rule for flag in result.report.flags] == ["optimizer subclasses"]
    assert "update_step" in result.report.flags[0].action


def test_keras2_optimizer_takes_keras2_positional_order():
    sgd = compat.keras2_optimizer(keras.optimizers.SGD)(0.2, 0.5, 0.0, True)
    assert float(sgd.learning_rate) == pytest.approx(0.2)
    assert (float(sgd.momentum), sgd.nesterov) == (0.5, True)
    assert compat.keras2_optimizer(keras.optimizers.SGD) is type(sgd)
    with pytest.raises(ValueError, match="keras.optimizers class Keras 2 had"):
        compat.keras2_optimizer(keras.optimizers.Lion)
