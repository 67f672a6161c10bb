# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.multi_step` (Keras 3.5 to 3.15)."""

import inspect

from keras.src.backend.tensorflow import trainer as keras_tf_trainer

from parallel_keras._internals import multi_step


def test_the_multi_step_loop_stops_at_the_data_end_or_runs_past_it():
    """Keras 3.7+: `_make_function` loops over `get_next_as_optional` (stops
    at the data's end). Keras 3.5-3.6: `next(iterator)` `steps_per_execution`
    times, which `require_multi_step_support` refuses for a partial epoch."""
    trainer_class = keras_tf_trainer.TensorFlowTrainer
    if hasattr(trainer_class, "_make_function"):  # Keras 3.7+.
        assert multi_step.stops_at_data_end()
        assert "get_next_as_optional" in inspect.getsource(trainer_class._make_function)
    else:  # Keras 3.5-3.6.
        assert not multi_step.stops_at_data_end()
        source = inspect.getsource(trainer_class.make_train_function)
        assert "for _ in range(self.steps_per_execution):" in source
        assert "get_next_as_optional" not in source
