# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/reset_states.py: Keras 2's model.reset_states()."""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras.migrate.rules import reset_states
from tests.migrate.helpers import check_flag, check_rewrite


def test_statement_becomes_a_test_of_the_object():
    check_rewrite(
        "for e in range(2):\n    model.reset_states()\n",
        "for e in range(2):\n"
        + "".join(
            "    " + line + "\n" for line in reset_states._TEMPLATE.format(x="model").splitlines()
        ),
    )


def test_callback_attribute_receiver():
    result = check_rewrite(
        "class R(Callback):\n    def on_epoch_end(self, epoch, logs=None):\n"
        "        self.model.reset_states()\n",
        "class R(Callback):\n    def on_epoch_end(self, epoch, logs=None):\n"
        + "".join(
            "        " + line + "\n"
            for line in reset_states._TEMPLATE.format(x="self.model").splitlines()
        ),
    )
    assert len(result.report.changes) == 1


def test_lambda_is_flagged():
    result = check_flag(
        "cb = LambdaCallback(on_epoch_end=lambda e, l: model.reset_states())\n", "reset_state()"
    )
    assert "lambda e, l: model.reset_states()" in result.migrated


def _stateful_model():
    import keras

    model = keras.Sequential(
        [keras.Input(batch_shape=(2, 3, 1)), keras.layers.LSTM(4, stateful=True)]
    )
    model.predict(np.ones((2, 3, 1)), verbose=0)
    return model


@pytest.mark.parametrize("wrap", ["plain", "layer"])
def test_rewritten_code_resets_a_keras3_model_and_a_layer(wrap):
    import keras

    model = _stateful_model()
    lstm = model.layers[0]
    assert not hasattr(model, "reset_states")  # why the rewrite exists
    assert np.abs(keras.ops.convert_to_numpy(lstm.states[0])).sum() > 0
    exec(
        reset_states._TEMPLATE.format(x="target"),  # noqa: S102
        {"target": model if wrap == "plain" else lstm},
    )
    for state in lstm.states:
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(state), 0.0)
