# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.loss_tracking` (Keras 3.5 to 3.15).

They fail loudly when an upgrade changes Keras's loss trackers or metric order.
"""

import keras
import numpy as np

from parallel_keras._internals import compiled_functions, loss_tracking


def _compiled_two_output_model() -> keras.Model:
    inputs = keras.Input((2,))
    model = keras.Model(
        inputs,
        {
            "a": keras.layers.Dense(1, name="a")(inputs),
            "b": keras.layers.Dense(1, name="b")(inputs),
        },
    )
    model.compile("sgd", {"a": "mse", "b": "mae"}, metrics={"a": ["mae"]})
    return model


def test_keras_default_steps_and_metric_order_helpers():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    assert compiled_functions.is_keras_default_step(type(model), "train_step")
    assert loss_tracking.flatten_metrics_in_order(model, {"mae": 2.0, "loss": 1.0}) == [1.0, 2.0]
    assert loss_tracking.loss_tracker(model) is not None


def test_flatten_metrics_in_order_follows_the_models_metrics():
    """`Trainer._flatten_metrics_in_order` still orders logs as `model.metrics`
    (compile metrics expanded by their own, unprefixed names), then any other
    key sorted: a per-output metric `a_mae` sorts with the rest."""
    model = _compiled_two_output_model()
    x, y = np.ones((4, 2), "float32"), {"a": np.ones((4, 1)), "b": np.ones((4, 1))}
    logs = model.train_on_batch(x, y, return_dict=True)
    assert sorted(logs) == ["a_loss", "a_mae", "b_loss", "loss"]
    logs = {**logs, "extra": 9.0}
    assert loss_tracking.flatten_metrics_in_order(model, logs) == [
        logs["loss"],
        logs["a_loss"],
        logs["b_loss"],
        logs["a_mae"],
        9.0,
    ]


def test_output_loss_trackers_are_a_mean_per_output():
    """`CompileLoss.metrics` (via `_compile_loss`) holds one `Mean` per output,
    updated by the step; `_loss_tracker` is the total loss's `Mean`."""
    model = _compiled_two_output_model()
    assert loss_tracking.output_loss_trackers(keras.Sequential()) == []
    x, y = np.ones((4, 2), "float32"), {"a": np.zeros((4, 1)), "b": np.zeros((4, 1))}
    model.train_on_batch(x, y)
    trackers = loss_tracking.output_loss_trackers(model)
    assert len(trackers) == 2
    assert all(isinstance(tracker, keras.metrics.Mean) for tracker in trackers)
    assert all(float(tracker.count.numpy()) > 0 for tracker in trackers)
    assert isinstance(loss_tracking.loss_tracker(model), keras.metrics.Mean)


def test_keras_metrics_names_still_lump_compiled_metrics():
    """keras-team/keras#21487: `metrics_names` lists compiled metrics as one
    'compile_metrics', so `ParallelModel.metrics_names` lists them itself (as
    Keras 2 did). When this fails, Keras lists them: defer to it."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    model.evaluate(np.ones((4, 2), "float32"), np.full((4, 3), 1 / 3, "float32"), verbose=0)
    assert model.metrics_names == ["loss", "compile_metrics"]
