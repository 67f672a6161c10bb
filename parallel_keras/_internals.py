"""Every dependence of parallel_keras on private Keras / TensorFlow internals.

Nothing else in the package touches private attributes or imports
`keras.src`. Each piece names the upstream behaviour it relies on or works
around and the versions it was checked on; `tests/test_internals.py` fails
loudly when an upgrade changes any of them.

Checked on TensorFlow 2.21.0 with Keras 3.15.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import itertools

import keras
import tensorflow as tf

CHECKED_VERSIONS = {"tensorflow": "2.21.0", "keras": "3.15.1"}


# --- Variable relocation --------------------------------------------------
#
# Keras 3's TF backend `Variable` wraps a `tf.Variable` in `_value`, created
# by `Variable._initialize` with the aggregation mapped by `_map_aggregation`.
# A variable created outside `strategy.scope()` is a plain tf.Variable and
# `fit` under the strategy fails (bare AssertionError in Keras 3.15). Creating
# a new tf.Variable inside the scope, from the old value and with the same
# arguments `_initialize` uses, gives the same MirroredVariable a native build
# would; the Keras Variable object (what layers, the template and the user
# hold) stays the same, so weights are shared, not copied, and the old
# host copy is released.


def keras_variable_value(variable: keras.Variable) -> tf.Variable:
    """The tf.Variable behind a Keras variable (private `_value`)."""
    return variable._value


def relocate_variables(
    variables: Iterable[keras.Variable],
    strategy: tf.distribute.Strategy,
    mean_aggregated: Callable[[keras.Variable], bool] = lambda v: False,
) -> int:
    """Re-creates each variable's tf.Variable under `strategy.scope()`.

    Variables for which `mean_aggregated` is true are given MEAN aggregation,
    so an assignment made on each replica (BatchNormalization's moving
    statistics) is averaged across replicas instead of leaving every replica
    with its own value (tensorflow/tensorflow#46488: the replicas' moving
    statistics drift apart and the saved file disagrees with what was
    evaluated).

    Returns:
        The number of variables that were relocated.
    """
    moved = 0
    for variable in variables:
        current = variable._value
        if current is None:
            continue  # Not initialized yet: it will be built in scope.
        if _lives_in(current, strategy) and not (
            mean_aggregated(variable) and variable.aggregation != "mean"
        ):
            continue
        if mean_aggregated(variable):
            variable._aggregation = "mean"
        # Read outside the scope: a variable of another strategy can only be
        # read in its own scope or in none. One variable at a time, so the
        # host never holds a second copy of the whole model.
        with tf.init_scope():
            initial = tf.identity(current.read_value())
        with strategy.scope(), tf.init_scope():
            variable._value = tf.Variable(
                initial,
                dtype=variable._dtype,
                trainable=variable.trainable,
                name=variable.name,
                aggregation=variable._map_aggregation(variable.aggregation),
                synchronization=variable._map_synchronization(
                    variable.synchronization
                ),
            )
        del initial
        moved += 1
    return moved


def _lives_in(value: tf.Variable, strategy: tf.distribute.Strategy) -> bool:
    distributed = getattr(value, "_distribute_strategy", None)
    return distributed is strategy


def variable_devices(variable: keras.Variable) -> list[str]:
    """Devices holding a copy of a Keras variable (one per replica)."""
    value = variable._value
    if hasattr(value, "values"):
        return [component.device for component in value.values]
    return [value.device]


# --- Strategy captured at construction ------------------------------------
#
# Keras 3's `TensorFlowTrainer.__init__` stores `tf.distribute.get_strategy()`
# in `_distribute_strategy` when the model object is constructed, and
# `TFOptimizer.__init__` stores it in `_distribution_strategy`. A template
# built before `multi_gpu_model` (every legacy script) captured the default
# strategy; so did an optimizer built outside the scope and passed to
# `compile`. Pointing both at the replication strategy makes `fit` on either
# model, and the optimizer's slot creation, use the replicas.


def model_strategy(model: keras.Model) -> tf.distribute.Strategy | None:
    return getattr(model, "_distribute_strategy", None)


def set_model_strategy(model: keras.Model, strategy: tf.distribute.Strategy) -> None:
    model._distribute_strategy = strategy


def optimizer_strategy(optimizer: keras.optimizers.Optimizer):
    return getattr(optimizer, "_distribution_strategy", None)


def set_optimizer_strategy(
    optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy
) -> None:
    optimizer._distribution_strategy = strategy


def reset_compiled_functions(model: keras.Model) -> None:
    """Drops a model's traced train/test/predict functions.

    Keras caches them on the model (`make_train_function` returns the cached
    one); after the strategy or variables behind a model change they must be
    traced again.
    """
    model.train_function = None
    model.test_function = None
    model.predict_function = None


# --- First-batch symbolic build under a strategy --------------------------
#
# `TensorFlowTrainer._maybe_symbolic_build` (Keras 3.15) reduces the first
# distributed batch with `strategy.reduce("MEAN", batch, axis=None)` only to
# learn its shapes. With a batch that does not split evenly across replicas
# (e.g. 16 rows on 3 replicas: 6/5/5) the reduction fails with
# "Inputs to operation AddN ... must have the same size and shape", and under
# MultiWorkerMirroredStrategy it fails converting PerReplica to a Tensor
# (keras-team/keras#20585, tensorflow/tensorflow#72388). Using the first local
# replica's values gives the same shapes (all that is used) without any
# cross-replica op.


class SymbolicBuildFromLocalReplica:
    """Mixin for a Keras model: builds its compile state from one replica."""

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self._distribute_strategy is None:
            return super()._maybe_symbolic_build(
                iterator=iterator, data_batch=data_batch
            )
        strategy = self._distribute_strategy
        if iterator is not None:
            for _, _, batch_iterator in iterator:
                data_batch = next(batch_iterator)
                break
        data_batch = tf.nest.map_structure(
            lambda value: strategy.experimental_local_results(value)[0]
            if isinstance(value, tf.distribute.DistributedValues)
            else value,
            data_batch,
        )
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)


# --- Collective keys shared across strategies -----------------------------
#
# tensorflow/tensorflow#61314: every `CollectiveAllReduce` built by
# MirroredStrategy starts its collective group and instance keys at the same
# values, and the process-wide collective executor keeps the groups it has
# seen. After training under a 4-device strategy, a new 2- or 3-device
# strategy in the same process fails in its first step (InternalError in
# CollectiveReduceV2). Giving each strategy its own key range keeps their
# groups apart.

_GROUP_KEY_BLOCK = 1_000_000
_group_key_blocks = itertools.count(1)


def collective_all_reduce(devices: list[str]) -> tf.distribute.CrossDeviceOps:
    """An all-reduce among `devices` whose collective keys no strategy shares."""
    from tensorflow.python.distribute import cross_device_ops  # pylint: disable=g-direct-tensorflow-import
    from tensorflow.python.distribute import cross_device_utils  # pylint: disable=g-direct-tensorflow-import

    keys = cross_device_utils.CollectiveKeys(
        group_key_start=1 + next(_group_key_blocks) * _GROUP_KEY_BLOCK
    )
    return cross_device_ops.CollectiveAllReduce(
        devices=list(devices),
        group_size=len(devices),
        options=tf.distribute.experimental.CommunicationOptions(),
        collective_keys=keys,
    )


# --- Multi-worker training (issue 5) --------------------------------------
#
# Three private touches make Keras 3 `fit` work under
# MultiWorkerMirroredStrategy (MWMS). Checked on TF 2.21 / Keras 3.15.


def tf_runtime_initialized() -> bool:
    """True once TensorFlow's eager context has started (devices fixed).

    MWMS configures collective ops and the coordination service, which
    TensorFlow only accepts before its context starts ("Collective ops must
    be configured at program startup", context.py).
    """
    from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

    return context.context()._context_handle is not None


# `parallel-keras launch` must create MWMS before TensorFlow starts, yet a
# script rehearsed on one machine calls `simulate_devices(n)` first and only
# then builds models; creating the strategy in the launcher's bootstrap, before
# the script runs, fixes the devices too early (issue 13). TensorFlow starts
# its runtime in `tensorflow.python.eager.context.Context.ensure_initialized`
# (every op, variable and device listing goes through it), so the bootstrap
# arms a callback that creates the strategy right before the first call, after
# whatever the script's first lines configured. Checked on TF 2.21.

_BEFORE_TF_STARTS: dict[str, Callable[[], None] | None] = {"callback": None}


def run_before_tf_starts(callback: Callable[[], None]) -> None:
    """Calls `callback()` once, just before TensorFlow's runtime starts."""
    from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

    _BEFORE_TF_STARTS["callback"] = callback
    if getattr(context.Context.ensure_initialized, "_parallel_keras_hook", False):
        return
    original = context.Context.ensure_initialized

    def ensure_initialized(self):
        callback_now = _BEFORE_TF_STARTS["callback"]
        if callback_now is not None and self._context_handle is None:
            _BEFORE_TF_STARTS["callback"] = None
            callback_now()
        return original(self)

    ensure_initialized._parallel_keras_hook = True
    context.Context.ensure_initialized = ensure_initialized


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
    cluster_resolver=None,
    local_cpu_devices: int | None = None,
) -> tf.distribute.MultiWorkerMirroredStrategy:
    """Builds MWMS, optionally on `local_cpu_devices` CPUs per worker."""
    from tensorflow.python.distribute import collective_all_reduce_strategy as mwms_lib  # pylint: disable=g-direct-tensorflow-import

    extended = mwms_lib.CollectiveAllReduceExtended
    original = extended._initialize_local_devices

    def simulated_local_devices(self, resolver, worker_device):
        names = tuple(
            f"{worker_device}/device:CPU:{index}" for index in range(local_cpu_devices)
        )
        return names, "CPU"

    if local_cpu_devices:
        extended._initialize_local_devices = simulated_local_devices
    try:
        return tf.distribute.MultiWorkerMirroredStrategy(
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
    from keras.src.backend.tensorflow import trainer  # pylint: disable=g-import-not-at-top

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
    trainer.reduce_per_replica = reduce_per_replica
    return True


def scalar_mean_reduction_workaround_active() -> bool:
    return _original_reduce_per_replica is not None


# `multi_worker.BackupAndRestore` resumes a restarted run where its last
# backup left it (issue 12): at a later epoch and, with a batch-level
# `save_freq`, mid-epoch. Keras 3.15 `fit` has no public argument a callback
# can set for either. Two touches, checked on TF 2.21 / Keras 3.15:
# 1. `Trainer._initial_epoch` (trainers/trainer.py): the TF trainer's `fit`
#    starts at `self._initial_epoch or initial_epoch`, read after
#    `on_train_begin`; Keras's own BackupAndRestore sets it the same way and
#    never resets it, so a later `fit` would start late: we reset it.
# 2. `model.train_function` (backend/tensorflow/trainer.py): `fit` builds it
#    before `on_train_begin` and calls `self.train_function(iterator)` once
#    per step (`steps_per_execution` batches); replacing it for the first
#    steps of the resumed epoch with one that only takes the batches off the
#    iterator skips them without training, so the data lines up with the
#    state restored.


def set_initial_epoch(model: keras.Model, epoch: int | None) -> None:
    """Makes the next (or running) `fit` of `model` start at `epoch`."""
    model._initial_epoch = epoch


def skip_train_steps(model: keras.Model, steps: int) -> None:
    """Makes the next `steps` training steps of `fit` consume data only."""
    original = model.train_function
    if steps <= 0 or original is None:
        return
    batches_per_step = int(getattr(model, "steps_per_execution", 1) or 1)
    remaining = [steps]

    def skip_then_train(iterator):
        if remaining[0] <= 0:
            return original(iterator)
        remaining[0] -= 1
        if remaining[0] == 0:
            model.train_function = original
        for _ in range(batches_per_step):
            next(iterator)
        return {}

    model.train_function = skip_then_train


# --- Device placement of functional layer calls (issue 4) -----------------
#
# A Keras 3 functional model records each layer call made while it is built
# as a `keras.src.ops.node.Node` (appended to `layer._inbound_nodes`) and, at
# call time, re-runs those calls in `Function._run_through_graph`, outside
# any `tf.device` scope they were built in, so that placement is lost. These
# private touches give `parallel_keras.device` its effect. All checked on
# TF 2.21 / Keras 3.15; `tests/test_placement_internals.py` fails loudly when
# an upgrade changes one of them.
# 1. `Node.__init__` runs once per symbolic layer call: wrapping it tells
#    parallel_keras which node a call inside `parallel_keras.device` made.
# 2. `Function._run_through_graph` (eager call, predict, evaluate, the traced
#    train step) asks `Function._get_operation_for_node(node)` for each
#    node's operation just before calling it (added for NNX in Keras 3.11);
#    wrapping it lets a placed node's call run inside `tf.device`.
# 3. `Functional.get_config` / `functional.functional_from_config`: the
#    placement is written under one extra top-level config key. Plain Keras's
#    `functional_from_config` passes unknown keys to `Functional.__init__`
#    as `**kwargs`, which ignores them, so plain Keras still loads the file.
# 4. A model's own nodes: `Function._nodes` (keys from `make_node_key`),
#    `Function._nodes_by_depth`, `Node.parent_nodes`, `Node.is_input`, with
#    nodes renumbered per layer the way `Functional.get_config` does.

_placement_hooks = {}


def install_node_created_hook(hook: Callable[[object], None]) -> None:
    """Calls `hook(node)` after every non-input Keras `Node` is created."""
    from keras.src.ops import node as node_module  # pylint: disable=g-direct-keras-import

    if "node_created" in _placement_hooks:
        _placement_hooks["node_created"] = hook
        return
    original_init = node_module.Node.__init__

    def init_then_notify(node, *args, **kwargs):
        original_init(node, *args, **kwargs)
        if not node.is_input:
            _placement_hooks["node_created"](node)

    init_then_notify.__wrapped__ = original_init
    _placement_hooks["node_created"] = hook
    node_module.Node.__init__ = init_then_notify


def install_operation_for_node_hook(hook: Callable[[object, object], object]) -> None:
    """Lets `hook(node, operation)` replace the callable run for each node."""
    from keras.src.ops import function as function_module  # pylint: disable=g-direct-keras-import

    if "operation_for_node" in _placement_hooks:
        _placement_hooks["operation_for_node"] = hook
        return
    original = function_module.Function._get_operation_for_node

    def operation_for_node(function, node):
        return _placement_hooks["operation_for_node"](node, original(function, node))

    operation_for_node.__wrapped__ = original
    _placement_hooks["operation_for_node"] = hook
    function_module.Function._get_operation_for_node = operation_for_node


def install_functional_config_hooks(
    key: str,
    save: Callable[[keras.Model], object],
    load: Callable[[keras.Model, object], None],
) -> None:
    """Adds `save(model)` under `config[key]`; `load(model, value)` on load.

    `save` returning None leaves the config exactly as Keras wrote it. The
    load side wraps `functional_from_config`, which `Model.from_config`
    (and so `.keras` loading, `Functional.from_config` and
    `keras.Model.from_config`) imports at call time.
    """
    from keras.src.models import functional as functional_module  # pylint: disable=g-direct-keras-import

    first_install = "config" not in _placement_hooks
    _placement_hooks["config"] = (key, save, load)
    if not first_install:
        return
    original_get_config = functional_module.Functional.get_config
    original_from_config = functional_module.functional_from_config

    def get_config(model):
        config = original_get_config(model)
        key, save, _ = _placement_hooks["config"]
        value = save(model)
        if value is not None:
            config[key] = value
        return config

    def functional_from_config(cls, config, custom_objects=None):
        key, _, load = _placement_hooks["config"]
        config = dict(config)
        value = config.pop(key, None)
        model = original_from_config(cls, config, custom_objects=custom_objects)
        if value is not None:
            load(model, value)
        return model

    get_config.__wrapped__ = original_get_config
    functional_from_config.__wrapped__ = original_from_config
    functional_module.Functional.get_config = get_config
    functional_module.functional_from_config = functional_from_config


def is_functional(model: object) -> bool:
    """True for models built as `keras.Model(inputs, outputs)` (Functional)."""
    from keras.src.models.functional import Functional  # pylint: disable=g-direct-keras-import

    return isinstance(model, Functional)


def functional_layer_calls(model: keras.Model) -> list[tuple[object, int, object]]:
    """`(layer, call_index, node)` for each layer call of a functional model.

    In the order the model runs them (deepest first, as
    `_run_through_graph`). `call_index` numbers the calls of a layer that
    belong to this model, as `Functional.get_config` does (a nested
    functional model's own first node counts as call 0), so it is the same
    before saving and after loading.
    """
    from keras.src.models.functional import Functional  # pylint: disable=g-direct-keras-import
    from keras.src.ops.function import make_node_key  # pylint: disable=g-direct-keras-import

    call_indices = {}
    for operation in model._operations:
        kept = 1 if isinstance(operation, Functional) else 0
        for original_index, node in enumerate(operation._inbound_nodes):
            if make_node_key(operation, original_index) in model._nodes:
                call_indices[id(node)] = kept
                kept += 1
    calls = []
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if node.is_input or not node.operation:
                continue
            calls.append((node.operation, call_indices[id(node)], node))
    return calls


def functional_graph(
    model: keras.Model,
) -> tuple[list[object], dict[int, list[object]], list[object], list[object]]:
    """`(nodes, parents, input_nodes, output_nodes)` of a functional model.

    `nodes` (in run order) includes the model's input nodes; `parents` maps
    `id(node)` to the nodes whose outputs that node's call consumes;
    `input_nodes` and `output_nodes` follow `model.inputs` / `model.outputs`.
    """
    nodes = [
        node
        for depth in sorted(model._nodes_by_depth, reverse=True)
        for node in model._nodes_by_depth[depth]
    ]
    parents = {id(node): list(node.parent_nodes) for node in nodes}

    def producer(tensor):
        operation, node_index, _ = tensor._keras_history
        return operation._inbound_nodes[node_index]

    input_nodes = [producer(tensor) for tensor in model.inputs]
    output_nodes = [producer(tensor) for tensor in model.outputs]
    return nodes, parents, input_nodes, output_nodes


# --- Op callbacks for the op-device recorder (issue 4) --------------------
#
# `tensorflow.python.framework.op_callbacks` is the hook that
# `tf.debugging.experimental.enable_check_numerics` is built on: a callback
# sees every eager op execution (with its output tensors, whose `.device` is
# where the op ran) and every op created while tracing a graph (with its
# symbolic outputs, whose `.op.device` is the placement asked of the placer).
# Checked on TF 2.21.


def add_op_callback(callback: Callable[..., None]) -> None:
    from tensorflow.python.framework import op_callbacks  # pylint: disable=g-direct-tensorflow-import

    op_callbacks.add_op_callback(callback)


def remove_op_callback(callback: Callable[..., None]) -> None:
    from tensorflow.python.framework import op_callbacks  # pylint: disable=g-direct-tensorflow-import

    op_callbacks.remove_op_callback(callback)


# --- Checkpoint writing and legacy HDF5 weights (issue 3) -----------------
#
# `keras.callbacks.ModelCheckpoint` writes in its private `_save_model(epoch,
# batch, logs)`, after `_get_file_path` formats the path and
# `_should_save_model` applies `save_best_only`/`monitor`/`mode`. Overriding
# that one method routes the write through parallel_keras (atomic, through
# the template) while keeping Keras' own monitor logic and messages.
# Keras 3 refuses `save_weights("x.h5")`, but still loads the legacy layout
# (layer_names / weight_names) that `legacy_h5_format.
# save_weights_to_hdf5_group` writes; Keras 2 checkpoint code uses `.h5`.
# Checked on TF 2.21 / Keras 3.15.


class ModelCheckpointWriteHook(keras.callbacks.ModelCheckpoint):
    """A stock ModelCheckpoint whose file write calls `write_checkpoint`."""

    def _save_model(self, epoch, batch, logs):
        filepath = self._get_file_path(epoch, batch, logs)
        if self._should_save_model(epoch, batch, logs, filepath):
            self.write_checkpoint(filepath, epoch=epoch)

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        raise NotImplementedError


def save_legacy_h5_weights(h5_group, model: keras.Model) -> None:
    """Writes `model`'s weights in the Keras 2 layout into an open h5py group."""
    from keras.src.legacy.saving import legacy_h5_format  # pylint: disable=g-direct-keras-import

    legacy_h5_format.save_weights_to_hdf5_group(h5_group, model)
