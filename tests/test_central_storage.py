# SPDX-License-Identifier: Apache-2.0
"""`data_parallel.central_storage`: the upstream double count it corrects."""

import keras
import pytest
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import variables
from parallel_keras.data_parallel import central_storage


def test_central_storage_metric_updates_in_replica_context_double_count():
    """Keras's `assign_add` is `assign(self + value)`: on CentralStorageStrategy's
    replicas a second update adds N * old. When this fails, upstream changed
    and `correct_summed_assigns` must go.

    Keras 3.5-3.7 never pass a metric's "sum" aggregation to its tf.Variable
    (`variables._INITIALIZE_SHAPES`): created under the strategy it is NONE,
    and an update on the replicas raises. There parallel_keras relocates the
    metric variables once built (`_internals.symbolic_build`), after
    which they double count as on Keras 3.8+."""
    strategy = tf.distribute.experimental.CentralStorageStrategy(
        compute_devices=["/cpu:0", "/cpu:1"], parameter_device="/cpu:0"
    )
    assert central_storage.sums_replica_assigns(strategy)
    with strategy.scope():
        total = keras.metrics.Sum()
        total.update_state(0.0)

    def update_function():
        return tf.function(lambda: strategy.run(lambda: total.update_state(1.0)))

    if variables.initialize_passes_aggregation():  # Keras 3.8+.
        assert _internals.replica_aggregation(total.total) == "sum"
    else:  # Keras 3.5-3.7.
        assert _internals.replica_aggregation(total.total) == "none"
        with pytest.raises(ValueError, match="aggregation"):
            update_function()()
        assert _internals.relocate_variables(total.variables, strategy) == len(total.variables)
        assert _internals.replica_aggregation(total.total) == "sum"
    update = update_function()
    update()
    update()
    assert float(total.result()) == 2.0 * 2.0 + 2.0  # one device of sums: 4.0
