# SPDX-License-Identifier: Apache-2.0
"""The auto-shard policy of multi-worker input pipelines, set deliberately.

Under `MultiWorkerMirroredStrategy` every worker must read a different part
of the data. tf.data's default policy, AUTO, first tries to shard by input
file; a pipeline built from in-memory arrays has no files, so each
distribution of it logs "Found an unshardable source dataset" and falls back
to sharding by element (the warning flood users report,
tensorflow/tensorflow#45157, #42146). parallel_keras states the policy instead:

* NumPy arrays passed to `fit`/`evaluate`/`predict`: Keras 3 already sets
  DATA (`array_data_adapter`), nothing to do.
* A `tf.data.Dataset` you build: pass it through `shard_by_data` (DATA: each
  worker keeps every N-th global batch's rows for its replicas), or shard it
  yourself by file and set OFF.

Either way the global batch is split across all replicas of all workers.
"""

from __future__ import annotations

import tensorflow as tf


def shard_by_data(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Returns `dataset` with the DATA auto-shard policy (no warning flood).

    Args:
        dataset: A batched `tf.data.Dataset` (batch = global batch size).

    Returns:
        The same pipeline, sharded by element across workers when
        distributed.

    Raises:
        TypeError: If `dataset` is not a `tf.data.Dataset`.

    Example:

    >>> import tensorflow as tf
    >>> from parallel_keras.multi_worker import sharding
    >>> ds = sharding.shard_by_data(tf.data.Dataset.range(8).batch(4))
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise TypeError(
            "shard_by_data takes a tf.data.Dataset. Received: "
            f"{type(dataset).__name__}. NumPy arrays need nothing: Keras "
            "already shards them by data."
        )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)
