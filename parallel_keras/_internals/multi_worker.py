# SPDX-License-Identifier: Apache-2.0
"""MultiWorkerMirroredStrategy (MWMS) start-up and Keras's metric reduction.

Upstream surface: TensorFlow's eager `Context` (`_context_handle`,
`ensure_initialized`, tensorflow/python/eager/context.py), MWMS's
`CollectiveAllReduceExtended._initialize_local_devices`
(collective_all_reduce_strategy.py), and Keras's `reduce_per_replica`
(backend/tensorflow/trainer.py). Works around keras-team/keras#20585 and
tensorflow/tensorflow#72388 (`fit` under MWMS fails reducing 0-d metrics).

Checked on TensorFlow 2.16.2 to 2.21.0 (noxfile.py pairs); `tests/internals/
test_multi_worker.py` fails when an upgrade changes what this relies on;
`tests/test_multi_worker.py` reports whether the workaround is still needed.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from parallel_keras._internals import interceptions

# --- Multi-worker training --------------------------------------
#
# Three private touches make Keras 3 `fit` work under
# MultiWorkerMirroredStrategy (MWMS). Checked on TF 2.21 / Keras 3.15.


def tf_runtime_initialized() -> bool:
    """True once TensorFlow's eager context has started (devices fixed).

    MWMS configures collective ops and the coordination service, which
    TensorFlow only accepts before its context starts ("Collective ops must
    be configured at program startup", context.py).
    """
    from tensorflow.python.eager import context

    return context.context()._context_handle is not None


# `parallel-keras launch` must create MWMS before TensorFlow starts, yet a
# script rehearsed on one machine calls `simulate_devices(n)` first and only
# then builds models; creating the strategy in the launcher's bootstrap, before
# the script runs, fixes the devices too early. TensorFlow starts
# its runtime in `tensorflow.python.eager.context.Context.ensure_initialized`
# (every op, variable and device listing goes through it), so the bootstrap
# arms a callback that creates the strategy right before the first call, after
# whatever the script's first lines configured. Checked on TF 2.21.

_BEFORE_TF_STARTS: dict[str, Callable[[], None] | None] = {"callback": None}
_ENSURE_INITIALIZED = "tensorflow.python.eager.context.Context.ensure_initialized"


def run_before_tf_starts(callback: Callable[[], None]) -> None:
    """Calls `callback()` once, just before TensorFlow's runtime starts."""
    from tensorflow.python.eager import context

    _BEFORE_TF_STARTS["callback"] = callback
    if interceptions.is_installed(_ENSURE_INITIALIZED):
        return
    original = context.Context.ensure_initialized

    def ensure_initialized(self):
        callback_now = _BEFORE_TF_STARTS["callback"]
        if callback_now is not None and self._context_handle is None:
            _BEFORE_TF_STARTS["callback"] = None
            callback_now()
        return original(self)

    interceptions.patch(
        context.Context,
        "ensure_initialized",
        ensure_initialized,
        by=__name__,
        when="in a worker started by parallel-keras launch, before the script runs",
        why="Creates the MultiWorkerMirroredStrategy just before TensorFlow's runtime "
        "starts, after the script's first lines (simulate_devices) configured it.",
    )


def cancel_before_tf_starts() -> None:
    """Disarms `run_before_tf_starts` (the strategy is being created now)."""
    _BEFORE_TF_STARTS["callback"] = None


# MWMS picks its local devices in `CollectiveAllReduceExtended.
# _initialize_local_devices`: every GPU, else exactly one CPU, whatever
# logical CPU devices exist. To rehearse "2 workers x 2 GPUs" on CPUs we
# substitute the simulated CPU devices while the strategy is constructed
# (the method runs only inside the constructor).


def multi_worker_mirrored_strategy(
    communication_options: tf.distribute.experimental.CommunicationOptions,
    cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver | None = None,
    local_cpu_devices: int | None = None,
    strategy_class: type = tf.distribute.MultiWorkerMirroredStrategy,
) -> tf.distribute.MultiWorkerMirroredStrategy:
    """Builds MWMS, optionally on `local_cpu_devices` CPUs per worker."""
    from tensorflow.python.distribute import collective_all_reduce_strategy as mwms_lib

    extended = mwms_lib.CollectiveAllReduceExtended
    original = extended._initialize_local_devices

    device_count = local_cpu_devices or 0

    def simulated_local_devices(self, resolver, worker_device):
        names = tuple(f"{worker_device}/device:CPU:{index}" for index in range(device_count))
        return names, "CPU"

    if local_cpu_devices:
        extended._initialize_local_devices = simulated_local_devices
    try:
        return strategy_class(
            cluster_resolver=cluster_resolver,
            communication_options=communication_options,
        )
    finally:
        extended._initialize_local_devices = original


# Keras 3.15 `reduce_per_replica` (backend/tensorflow/trainer.py) reduces
# every metric under multi-worker MWMS with `strategy.reduce("MEAN", v,
# axis=0)`; metric results are 0-d, so the first train step fails with
# "Invalid reduction dimension 0 for input with 0 dimensions"
# (keras-team/keras#20585, tensorflow/tensorflow#72388). The replacement
# reduces 0-d values over replicas only (axis=None) and leaves everything
# else to Keras. It is installed only when a probe shows the defect, so it
# steps aside once Keras fixes it; `tests/test_multi_worker.py` reports
# which case holds.

_original_reduce_per_replica = None


def _keras_tf_trainer():
    from keras.src.backend.tensorflow import trainer

    return trainer


def keras_scalar_mean_reduction_fails(
    strategy: tf.distribute.MultiWorkerMirroredStrategy,
) -> bool:
    """Whether Keras' own `reduce_per_replica` fails on a 0-d metric value.

    Traces (never runs) the reduction, so no collective executes.
    """
    trainer = _keras_tf_trainer()
    reduce = _original_reduce_per_replica or trainer.reduce_per_replica

    @tf.function(autograph=False)
    def probe():
        return reduce(tf.constant(1.0), strategy, "auto")

    try:
        probe.get_concrete_function()
    except ValueError:
        return True
    return False


def install_scalar_mean_reduction_workaround(
    strategy: tf.distribute.MultiWorkerMirroredStrategy,
) -> bool:
    """Installs the 0-d metric reduction fix if Keras still needs it.

    Returns:
        True if the workaround is active after the call.
    """
    global _original_reduce_per_replica
    if _original_reduce_per_replica is not None:
        return True
    if not keras_scalar_mean_reduction_fails(strategy):
        return False
    trainer = _keras_tf_trainer()
    original = trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if reduction not in ("auto", "mean") or not isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):
            return original(values, strategy, reduction)

        def reduce_one(value):
            local = strategy.experimental_local_results(value)[0]
            if getattr(local, "shape", None) is not None and local.shape.rank == 0:
                return strategy.reduce("MEAN", value, axis=None)
            return original(value, strategy, reduction)

        return tf.nest.map_structure(reduce_one, values)

    _original_reduce_per_replica = original
    interceptions.patch(
        trainer,
        "reduce_per_replica",
        reduce_per_replica,
        by=__name__,
        when="at the first multi-worker fit, if a traced probe shows Keras's defect",
        why="Reduces 0-d metric values over replicas only (axis=None): Keras's "
        "reduce_per_replica fails on them under MWMS (keras-team/keras#20585).",
    )
    return True


def scalar_mean_reduction_workaround_active() -> bool:
    """Whether `install_scalar_mean_reduction_workaround` replaced Keras's."""
    return _original_reduce_per_replica is not None


# --- Slurm task counts ------------------------------------------------------
#
# `tf.distribute.cluster_resolver.SlurmClusterResolver` is public, but the
# parser of Slurm's compressed task counts ("2(x3),1" -> [2, 2, 2, 1]) that it
# uses is the private module function
# `tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver.
# expand_tasks_per_node`. Reusing it keeps our count of tasks per node the
# same as the resolver's. Checked identical on TF 2.16.2 and 2.21.0.


def expand_slurm_tasks_per_node(tasks_per_node: str) -> list[int]:
    """Slurm's `SLURM_STEP_TASKS_PER_NODE`, one count per node."""
    from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver

    return slurm_cluster_resolver.expand_tasks_per_node(tasks_per_node)
