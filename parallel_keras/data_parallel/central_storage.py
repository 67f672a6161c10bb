# SPDX-License-Identifier: Apache-2.0
"""Metric counts under CentralStorageStrategy, corrected after replica-context
updates (no private Keras or TensorFlow: public `Mean.total`/`count`).
"""

from __future__ import annotations

import tensorflow as tf

# `CentralStorageStrategy` (TF 2.21) keeps one copy of every variable, an
# `AggregatingVariable` (distribute/ps_values.py): an assign made in replica
# context is a `merge_call` that assigns the replicas' values combined by the
# variable's aggregation (SUM for Keras's metric variables). Keras 3.15's
# `Variable.assign_add(value)` is `assign(self + value)`
# (backend/common/variables.py), so every replica's update adds the old
# total once more: N * old + the replicas' values, from the second batch on.
# parallel_keras updates the loss tracker and compiled metrics in
# cross-replica context instead (assigned once), and corrects the per-output
# loss trackers that Keras's `compute_loss` updates on each replica. The
# same on every Keras checked (3.5.0 to 3.15.1): below 3.10 the metric
# variables are first relocated (`_internals.symbolic_build`; on
# 3.5-3.7 Keras's own are unaggregated and a replica-context update raises),
# after which they double count alike.


def sums_replica_assigns(strategy) -> bool:
    """Whether an assign in replica context sums the replicas' assigned values."""
    return isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy)


def correct_summed_assigns(before, num_replicas: int) -> None:
    """Undoes the extra `(N - 1) * old` of replica-context `assign_add`s.

    `before` holds `(metric, (total, count))`: a `Mean`'s values read before
    its replicas' updates. Called in cross-replica context, after them.
    """
    for metric, old_values in before:
        for variable, old in zip((metric.total, metric.count), old_values):
            old = tf.distribute.get_strategy().experimental_local_results(old)[0]
            variable.assign(variable.value - (num_replicas - 1) * old)
