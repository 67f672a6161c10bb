# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/optimizers.py: Keras 2's `decay=` next to a callback that sets the rate.

Keras 2's `lr` was a variable that `ReduceLROnPlateau`, `LearningRateScheduler`
and `K.set_value(model.optimizer.lr, x)` set, and `decay=d` divided it by
`1 + d * iterations` inside each update. Keras 3's `InverseTimeDecay` schedule
computes the decay but cannot be set (TypeError at the callback), so such a
script goes through `compat.keras2_optimizer` with Keras 2's arguments and
trains with Keras 2's numbers (tests/compat/keras2_reference.py).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from parallel_keras import migrate
from tests.compat import keras2_reference as reference
from tests.migrate.helpers import check_flag, check_rewrite

_COMPAT = "parallel_keras.compat.keras2_optimizer"


def test_a_decay_next_to_reduce_lr_on_plateau_keeps_keras2_arguments():
    result = check_rewrite(
        """\
        from keras.callbacks import ReduceLROnPlateau
        from keras.optimizers import SGD
        reduce_lr = ReduceLROnPlateau(monitor='val_acc', factor=0.5)
        opt = SGD(lr=2.5e-5, decay=1e-6, momentum=0.9, nesterov=True)
        """,
        f"""\
        from keras.callbacks import ReduceLROnPlateau
        from keras.optimizers import SGD
        import parallel_keras

        reduce_lr = ReduceLROnPlateau(monitor='val_acc', mode='max', factor=0.5)
        opt = {_COMPAT}(SGD)(
            lr=2.5e-5, decay=1e-6, momentum=0.9, nesterov=True
        )
        """,
    )
    assert not result.report.flags
    (line,) = [change for change in result.report.changes if change.modern]
    assert "cannot be set" in line.message
    assert "InverseTimeDecay" in line.modern


def test_a_positional_decay_and_a_later_set_value_go_through_compat():
    # The optimizer comes before the callback that sets its rate.
    result = check_rewrite(
        """\
        import keras
        from keras import backend as K
        opt = keras.optimizers.Adam(0.01, 0.9, 0.999, None, 1e-4)
        class Warmup(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                K.set_value(self.model.optimizer.lr, 0.01 * (epoch + 1))
        """,
        f"""\
        import keras
        import parallel_keras

        opt = {_COMPAT}(keras.optimizers.Adam)(
            0.01, 0.9, 0.999, None, 1e-4
        )
        class Warmup(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.model.optimizer.learning_rate.assign(0.01 * (epoch + 1))
        """,
    )
    assert not result.report.flags


def test_a_decay_without_a_callback_setting_the_rate_stays_a_schedule():
    result = migrate.migrate_source(
        "import keras\nopt = keras.optimizers.SGD(lr=0.1, decay=1e-3)\n"
        "stop = keras.callbacks.EarlyStopping()\n"
    )
    assert "InverseTimeDecay" in result.migrated
    assert _COMPAT not in result.migrated


def test_tf_keras_rmsprop_with_decay_and_a_callback_stays_flagged():
    # compat.keras2_optimizer computes standalone Keras 2's RMSprop, which
    # tf.keras 2.x did not: no code runs it with tf.keras's meaning here.
    check_flag(
        """\
        import tensorflow as tf
        opt = tf.keras.optimizers.RMSprop(lr=0.01, decay=1e-4)
        cb = tf.keras.callbacks.ReduceLROnPlateau()
        """,
        "drop this callback",
    )


SCRIPTS = {
    "ReduceLROnPlateau": (
        """\
from keras.callbacks import ReduceLROnPlateau
from keras.optimizers import SGD
optimizer = SGD(lr=0.1, momentum=0.9, decay=0.1)
callbacks = [ReduceLROnPlateau(monitor='loss', factor=0.5, patience=0, min_delta=1e9)]
""",
        # Halved at the end of epochs 1-3 (no epoch after the first improves by 1e9).
        [0.1, 0.1, 0.05, 0.025, 0.0125],
    ),
    "set_value_in_a_callback": (
        """\
import keras
from keras import backend as K
optimizer = keras.optimizers.SGD(0.1, 0.9, 0.1)
class Halving(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        K.set_value(self.model.optimizer.lr, 0.1 * 0.5 ** epoch)
callbacks = [Halving()]
""",
        [0.1, 0.05, 0.025, 0.0125, 0.00625],
    ),
}


@pytest.mark.parametrize("script", SCRIPTS)
def test_migrated_decay_with_a_rate_setting_callback_trains_with_keras2_numbers(script):
    source, base_rates = SCRIPTS[script]
    result = migrate.migrate_source(source, "train.py")
    assert not result.report.flags
    namespace: dict = {}
    exec(compile(result.migrated, "train.py", "exec"), namespace)  # noqa: S102
    model = reference.linear_model()
    model.compile(optimizer=namespace["optimizer"], loss="mse")
    model.fit(
        reference.X.astype("float32"),
        reference.Y.astype("float32"),
        batch_size=len(reference.X),
        epochs=len(base_rates),
        shuffle=False,
        verbose=0,
        callbacks=namespace["callbacks"],
    )
    expected = reference.keras2_weights(
        "SGD", len(base_rates), decay=0.1, base_rates=base_rates, momentum=0.9, nesterov=False
    )
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-9)


def test_keras3_schedule_cannot_be_set_by_the_callback():
    # Why the schedule is not used next to such a callback.
    schedule = keras.optimizers.schedules.InverseTimeDecay(0.1, decay_steps=1, decay_rate=0.1)
    optimizer = keras.optimizers.SGD(learning_rate=schedule)
    with pytest.raises(TypeError, match="not settable"):
        optimizer.learning_rate = 0.05
