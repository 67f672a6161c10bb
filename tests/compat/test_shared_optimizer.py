# SPDX-License-Identifier: Apache-2.0
"""One optimizer compiled into several models trains as in Keras 2, as migrated."""

from __future__ import annotations

import numpy as np
import pytest
import tf_keras

from parallel_keras import compat, migrate
from tests.compat.helpers import assert_same_numbers, migrated, run

SHARED = """\
import numpy as np
from keras.layers import Dense, Input
from keras.models import Model
from keras.optimizers import Adam
from keras.utils import multi_gpu_model

rng = np.random.RandomState(0)
x = rng.rand(8, 3).astype('float32')
y_full, y_low = rng.rand(8, 1).astype('float32'), rng.rand(8, 2).astype('float32')


def discriminator(units, name):
    inputs = Input((3,))
    return Model(inputs, Dense(units, kernel_initializer='ones', name=name + '_out')(inputs))


full, low = discriminator(1, 'full'), discriminator(2, 'low')
initial = [w.copy() for w in full.get_weights() + low.get_weights()]
full_multi = multi_gpu_model(full, gpus=GPUS) if GPUS > 1 else full
low_multi = multi_gpu_model(low, gpus=GPUS) if GPUS > 1 else low
optimizer_dis = Adam(0.01, 0.5, decay=0.1)
full_multi.compile(optimizer=optimizer_dis, loss='mse')
low_multi.compile(optimizer=optimizer_dis, loss='mse')
for step in range(3):
    full_multi.train_on_batch(x, y_full)
    low_multi.train_on_batch(x, y_low)
steps = int(optimizer_dis.iterations.numpy())
"""


def _keras2_reference(namespace):
    """The same training with Keras 2's optimizer (tf_keras's legacy Adam: slots per
    weight, one shared iterations counter, lr / (1 + decay * iterations))."""
    models = []
    for units in (1, 2):
        inputs = tf_keras.Input((3,))
        models.append(tf_keras.Model(inputs, tf_keras.layers.Dense(units)(inputs)))
    initial = namespace["initial"]
    models[0].set_weights(initial[:2])
    models[1].set_weights(initial[2:])
    optimizer = tf_keras.optimizers.legacy.Adam(learning_rate=0.01, beta_1=0.5, decay=0.1)
    for model in models:
        model.compile(optimizer=optimizer, loss="mse")
    for _ in range(3):
        models[0].train_on_batch(namespace["x"], namespace["y_full"])
        models[1].train_on_batch(namespace["x"], namespace["y_low"])
    return models, int(optimizer.iterations.numpy())


def test_one_optimizer_compiled_into_two_models_trains_both_with_keras2_numbers():
    result = migrated(SHARED)
    assert result.migrated.count("parallel_keras.compat.shared_optimizer(optimizer_dis, ") == 2
    parallel, single = run(result, gpus=4), run(result, gpus=1)
    (full, low), iterations = _keras2_reference(single)
    for namespace in (parallel, single):
        # One counter for both models' steps, as Keras 2 kept.
        assert namespace["steps"] == iterations == 6
        assert_same_numbers(namespace["full"], full, rtol=1e-5, atol=1e-6)
        assert_same_numbers(namespace["low"], low, rtol=1e-5, atol=1e-6)
    # Migrating twice changes nothing.
    assert migrate.migrate_source(result.migrated, "script.py").migrated == result.migrated


def test_an_optimizer_that_already_trained_without_a_models_weights_is_refused():
    import keras

    def model(units):
        inputs = keras.Input((3,))
        return keras.Model(inputs, keras.layers.Dense(units)(inputs))

    first, second = model(1), model(2)
    optimizer = keras.optimizers.Adam()
    first.compile(optimizer=compat.shared_optimizer(optimizer, first), loss="mse")
    first.train_on_batch(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="Received: optimizer=Adam already trained"):
        compat.shared_optimizer(optimizer, second)


def test_a_module_compile_twice_on_one_variable_is_not_a_shared_optimizer():
    # `re.compile(pattern)` twice (a regular expression, not a model) stays.
    source = (
        "import re\nimport keras\npattern = 'model.(?P<epoch>\\\\d+).hdf5'\n"
        "p = re.compile(pattern)\nq = re.compile(pattern)\n"
    )
    result = migrate.migrate_source(source, "utils.py")
    assert result.migrated == source
    assert not result.report.changes
