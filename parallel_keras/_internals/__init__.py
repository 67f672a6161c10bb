# SPDX-License-Identifier: Apache-2.0
"""Every dependence of parallel_keras on private Keras / TensorFlow internals.

Nothing else in the package touches private attributes or imports
`keras.src`. One module per upstream surface, each naming the upstream
behaviour it relies on or works around and the versions it was checked on;
`tests/internals/test_<module>.py` fails loudly when an upgrade changes any of
them:

- `variables`: Keras variables relocated onto a strategy; stateful RNN state.
- Keras's trainer, one module per surface: `loss_tracking` (loss trackers,
  metric order, the loss under a strategy), `captured_strategy` (the
  strategy captured at construction), `compiled_functions` (default steps,
  cached traced functions, resume), `symbolic_build` (first-batch symbolic
  build), `seed_generators` (random ops per replica), `epoch_iterator`
  (Python data read one batch per step), `multi_step` (several steps per
  execution at an epoch's end), `layers` (sublayers of a layer).
- `collectives`: collective keys, which reduction a strategy performs, NCCL.
- `multi_worker`: TensorFlow runtime start, MWMS construction, Keras's
  scalar-mean reduction under MWMS.
- `optimizers`: Keras's optimizer: gradient accumulation on replicas, its
  variable index after relocation, clipping after the all-reduce.
- `placement`: device placement of functional layer calls.
- `interceptions`: every attribute of Keras/TensorFlow parallel_keras
  replaced (`patch`), listed by `installed()`, each removable.
- `logits`: the logits Keras's crossentropies read from a sigmoid or
  softmax output, kept through a gather.
- `op_callbacks`: TensorFlow op callbacks (the op-device recorder).
- `checkpoints`: `ModelCheckpoint`'s write and legacy HDF5 weights.
- `legacy_h5_models`: the training config and optimizer state of a whole-model
  legacy HDF5 file (Keras's loader cannot resume from it).
- `sessions`: the config a TF1 session was made with (compat.set_session).
- `device_lib`: TensorFlow's private `device_lib` listing (compat.device_lib,
  Keras 2's `K.device_lib`).
- `fit_arguments`: the locals of the Keras `fit` a callback runs in
  (compat.Keras2Callback's Keras 2 params).
- `versions`: the tested TensorFlow/Keras range; an error for an environment
  below it or not Keras 3 on TensorFlow, a warning above it.

Callers use `from parallel_keras import _internals; _internals.name` for the
names re-exported here; the trainer's surfaces are imported by module name
(`from parallel_keras._internals import seed_generators`). Only modules that already import TensorFlow
import this package (`import parallel_keras` stays TensorFlow-free).

Each module lists the Keras versions each of its upstream shapes was checked
on (Keras 3.5.0, 3.8.0, 3.10.0, 3.11.3, 3.15.1 with TensorFlow 2.16 to 2.21,
the pairs of noxfile.py); where an upstream form differs between versions,
one implementation per form is chosen once, at first use.
"""

# Before anything else imports Keras's internals or patches anything: an
# environment parallel_keras cannot run on is refused here, so Keras and the
# user's models stay as they were.
from parallel_keras._internals import versions as _versions

_versions.check_environment()


from parallel_keras._internals.checkpoints import (
    ModelCheckpointWriteHook,
    keras_weights_image,
    legacy_h5_model_to,
    save_legacy_h5_weights,
)
from parallel_keras._internals.collectives import (
    collective_all_reduce,
    collective_reductions_in_traced_function,
    cross_device_ops_kind,
    nccl_kernels_registered,
)
from parallel_keras._internals.device_lib import list_local_devices
from parallel_keras._internals.logits import (
    concat_keeping_logits,
    map_keeping_logits,
    output_logits,
)
from parallel_keras._internals.multi_worker import (
    cancel_before_tf_starts,
    expand_slurm_tasks_per_node,
    install_scalar_mean_reduction_workaround,
    keras_scalar_mean_reduction_fails,
    multi_worker_mirrored_strategy,
    run_before_tf_starts,
    scalar_mean_reduction_workaround_active,
    tf_runtime_initialized,
)
from parallel_keras._internals.op_callbacks import add_op_callback, remove_op_callback
from parallel_keras._internals.optimizers import (
    apply_weight_decay_here,
    clip_gradients,
    filter_empty_gradients,
    gradient_accumulators,
    micro_step_counter,
    optimizer_built_variables,
    optimizer_variable_keys,
    overwrite_with_moving_average_here,
    overwrites_with_gradient,
    rekey_optimizer_variables,
    update_moving_average_here,
)
from parallel_keras._internals.placement import (
    PlacementInternalsChanged,
    PlacementNeedsNewerKeras,
    functional_graph,
    functional_layer_calls,
    install_functional_config_hooks,
    install_node_created_hook,
    install_operation_for_node_hook,
    is_functional,
    keras_tensor_layer,
    require_placement_support,
    tf_device_scope,
)
from parallel_keras._internals.sessions import session_config
from parallel_keras._internals.variables import (
    created_trainable,
    is_keras_variable,
    keras_variable_value,
    relocate_variables,
    replica_aggregation,
    rnn_state_variables,
    variable_synchronization,
)
from parallel_keras._internals.versions import (
    CHECKED_VERSIONS,
    TESTED_RANGE,
    UnsupportedEnvironment,
    check_environment,
)

__all__ = [
    "add_op_callback",
    "apply_weight_decay_here",
    "cancel_before_tf_starts",
    "check_environment",
    "CHECKED_VERSIONS",
    "clip_gradients",
    "collective_all_reduce",
    "collective_reductions_in_traced_function",
    "concat_keeping_logits",
    "created_trainable",
    "cross_device_ops_kind",
    "expand_slurm_tasks_per_node",
    "filter_empty_gradients",
    "functional_graph",
    "functional_layer_calls",
    "gradient_accumulators",
    "install_functional_config_hooks",
    "install_node_created_hook",
    "install_operation_for_node_hook",
    "install_scalar_mean_reduction_workaround",
    "is_functional",
    "is_keras_variable",
    "keras_scalar_mean_reduction_fails",
    "keras_tensor_layer",
    "keras_variable_value",
    "replica_aggregation",
    "keras_weights_image",
    "legacy_h5_model_to",
    "list_local_devices",
    "map_keeping_logits",
    "micro_step_counter",
    "ModelCheckpointWriteHook",
    "multi_worker_mirrored_strategy",
    "nccl_kernels_registered",
    "optimizer_built_variables",
    "optimizer_variable_keys",
    "output_logits",
    "overwrite_with_moving_average_here",
    "overwrites_with_gradient",
    "PlacementInternalsChanged",
    "PlacementNeedsNewerKeras",
    "rekey_optimizer_variables",
    "relocate_variables",
    "remove_op_callback",
    "require_placement_support",
    "session_config",
    "rnn_state_variables",
    "run_before_tf_starts",
    "save_legacy_h5_weights",
    "scalar_mean_reduction_workaround_active",
    "TESTED_RANGE",
    "tf_device_scope",
    "tf_runtime_initialized",
    "UnsupportedEnvironment",
    "update_moving_average_here",
    "variable_synchronization",
]
