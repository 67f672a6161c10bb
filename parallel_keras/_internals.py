"""Every dependence of parallel_keras on private Keras / TensorFlow internals.

Nothing else in the package touches private attributes or imports
`keras.src`. Each piece names the upstream behaviour it relies on or works
around and the versions it was checked on; `tests/test_internals.py` fails
loudly when an upgrade changes any of them.

Checked on TensorFlow 2.21.0 with Keras 3.15.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import importlib
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
    synchronize: Callable[[keras.Variable], tuple[str, str] | None] = lambda v: None,
) -> int:
    """Re-creates each variable's tf.Variable under `strategy.scope()`.

    `synchronize(variable)` may return `(aggregation, synchronization)` (Keras
    names: "mean", "on_write", "on_read", "only_first_replica") to give the
    relocated variable. Used for state assigned on each replica:
    BatchNormalization's moving statistics get MEAN aggregation, so they are
    averaged across replicas instead of drifting apart
    (tensorflow/tensorflow#46488: the saved file disagrees with what was
    evaluated); a stateful RNN's states are per-replica (ON_READ), each
    replica keeping its own rows' state.

    Returns:
        The number of variables that were relocated.
    """
    moved = 0
    for variable in variables:
        current = variable._value
        if current is None:
            continue  # Not initialized yet: it will be built in scope.
        wanted = synchronize(variable)
        if _lives_in(current, strategy) and (
            wanted is None
            or (variable.aggregation, variable.synchronization) == wanted
        ):
            continue
        if wanted is not None:
            variable._aggregation, variable._synchronization = wanted
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


# --- Stateful RNN state -----------------------------------------------------
#
# Keras 3.15 `RNN._create_state_variables` (layers/rnn/rnn.py) creates a
# stateful layer's states as `backend.Variable`s under
# `no_automatic_dependency_tracking`, held in `layer.states`: they are not in
# `model.variables`, so relocating a model's variables misses them.


def rnn_state_variables(layer: keras.layers.Layer) -> list[keras.Variable]:
    """The state variables of a stateful RNN layer (empty if not built)."""
    states = getattr(layer, "states", None)
    if not getattr(layer, "stateful", False) or states is None:
        return []
    return [state for state in tf.nest.flatten(states) if isinstance(state, keras.Variable)]


# --- Keras's loss tracker ---------------------------------------------------
#
# Keras 3.15's `Trainer` records the loss metric in the private
# `_loss_tracker` (a `Mean` created by `compile`); the TF `train_step` and
# `test_step` update it. parallel_keras's steps do the same.


def loss_tracker(model: keras.Model):
    return getattr(model, "_loss_tracker", None)


# `CompileLoss.call` (trainers/compile_utils.py, Keras 3.15) records each
# output's unweighted loss in a `Mean` of `CompileLoss.metrics` (held by the
# model's private `_compile_loss`), weighted by the output's *static* batch
# size: unknown (weight 1) under tf.distribute, so replicas of 3 rows and
# of 1 row count alike. parallel_keras re-weights each replica's update.


def output_loss_trackers(model: keras.Model) -> list:
    compile_loss = getattr(model, "_compile_loss", None)
    if compile_loss is None:
        return []
    return [metric for metric in getattr(compile_loss, "metrics", []) if metric is not None]


# `Trainer._flatten_metrics_in_order` (Keras 3.15) orders `*_on_batch`
# results as `metrics_names`; `TensorFlowTrainer.train_step` & co. are the
# steps a model uses unless its class overrides them.


def flatten_metrics_in_order(model: keras.Model, logs: dict):
    return model._flatten_metrics_in_order(logs)


def is_keras_default_step(model_class: type, name: str) -> bool:
    from keras.src.backend.tensorflow import trainer  # pylint: disable=g-direct-keras-import

    return getattr(model_class, name) is getattr(trainer.TensorFlowTrainer, name)


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


def symbolic_build_from_local_replica(
    model: keras.Model,
    iterator=None,
    data_batch=None,
    select: Callable[[object], object] = lambda batch: batch,
) -> None:
    """Builds `model`'s compile state from one replica's batch shapes.

    Replaces `model._maybe_symbolic_build` for a model whose
    `_distribute_strategy` is set. With `iterator` (Keras's TFEpochIterator)
    the shapes come from its distributed dataset's element spec
    (`_distributed_dataset`, and a `PerReplicaSpec`'s `_value_specs`): no
    batch is read, where Keras's own method reads one and abandons the
    iteration, which with a `PyDataset` sometimes reorders the epoch's
    batches (seen on TF 2.21 / Keras 3.15, native MirroredStrategy too).
    `select` picks Keras's `(x, y, sample_weight)` out of the local batch.
    """
    strategy = model._distribute_strategy
    if iterator is not None:
        data_batch = _local_element_spec(iterator)
    data_batch = tf.nest.map_structure(
        lambda value: strategy.experimental_local_results(value)[0]
        if isinstance(value, tf.distribute.DistributedValues)
        else value,
        data_batch,
    )
    with strategy.scope():
        model._symbolic_build(data_batch=select(data_batch))


def _local_element_spec(iterator):
    """One replica's element spec of a TFEpochIterator's distributed dataset."""
    dataset = getattr(iterator, "_distributed_dataset", None)
    spec = getattr(dataset, "element_spec", None)
    if spec is None:
        raise ValueError(
            "Training and evaluation need data with a known structure. "
            f"Received: {type(dataset).__name__} without an element spec. "
            "Pass NumPy arrays, a tf.data.Dataset or a keras.utils.PyDataset."
        )

    def local(leaf):
        value_specs = getattr(leaf, "_value_specs", None)
        return value_specs[0] if value_specs else leaf

    return tf.nest.map_structure(local, spec, expand_composites=False)


def install_symbolic_build(model: keras.Model, select: Callable[[object], object]) -> None:
    """Makes `model` (an instance) build its compile state from one replica."""

    def maybe_symbolic_build(iterator=None, data_batch=None):
        symbolic_build_from_local_replica(model, iterator, data_batch, select)

    # On the instance, past Keras's attribute tracking: the class (and so
    # the saved config) stays the user's.
    model.__dict__["_maybe_symbolic_build"] = maybe_symbolic_build


def remove_symbolic_build(model: keras.Model) -> None:
    model.__dict__.pop("_maybe_symbolic_build", None)


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


def collective_all_reduce(
    devices: list[str],
    implementation: tf.distribute.experimental.CommunicationImplementation = (
        tf.distribute.experimental.CommunicationImplementation.AUTO
    ),
) -> tf.distribute.CrossDeviceOps:
    """An all-reduce among `devices` whose collective keys no strategy shares."""
    from tensorflow.python.distribute import cross_device_ops  # pylint: disable=g-direct-tensorflow-import
    from tensorflow.python.distribute import cross_device_utils  # pylint: disable=g-direct-tensorflow-import

    keys = cross_device_utils.CollectiveKeys(
        group_key_start=1 + next(_group_key_blocks) * _GROUP_KEY_BLOCK
    )
    return cross_device_ops.CollectiveAllReduce(
        devices=list(devices),
        group_size=len(devices),
        options=tf.distribute.experimental.CommunicationOptions(
            implementation=implementation
        ),
        collective_keys=keys,
    )


# --- Which reduction a strategy performs -------------------------------------
#
# `MirroredStrategy` keeps its cross-device ops in the private
# `extended._cross_device_ops` (mirrored_strategy.py, TF 2.21); a
# `CollectiveAllReduce` keeps its options in `_options`. Read to report the
# reduction in reprs and benchmark records. NCCL availability is what
# `cross_device_ops.select_cross_device_ops` checks: registered
# `NcclAllReduce` kernels.


def cross_device_ops_kind(strategy: tf.distribute.Strategy) -> tuple[str, str | None]:
    """`("one_device", device)`, `("ring", None)` or `("nccl", None)`."""
    ops = getattr(strategy.extended, "_cross_device_ops", None)
    if isinstance(ops, tf.distribute.ReductionToOneDevice):
        return "one_device", ops.reduce_to_device or "/cpu:0"
    if isinstance(ops, tf.distribute.NcclAllReduce):
        return "nccl", None
    options = getattr(ops, "_options", None)
    implementation = getattr(options, "implementation", None)
    if implementation == tf.distribute.experimental.CommunicationImplementation.NCCL:
        return "nccl", None
    return "ring", None


def nccl_kernels_registered() -> bool:
    from tensorflow.python.framework import kernels  # pylint: disable=g-direct-tensorflow-import

    return bool(kernels.get_registered_kernels_for_op("NcclAllReduce").kernel)


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
    strategy_class: type = tf.distribute.MultiWorkerMirroredStrategy,
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


class PlacementInternalsChanged(RuntimeError):
    """This Keras moved what the device-placement hooks patch."""


def _placement_internal(owner: object, attribute: str, what: str):
    """`owner.attribute`, or a loud error naming the upgrade that moved it.

    Never swallowed: a model loaded without these hooks would silently lose
    its saved placement (see `parallel_keras._placement_hooks`).
    """
    try:
        return getattr(owner, attribute)
    except AttributeError as error:
        raise PlacementInternalsChanged(
            f"parallel_keras's device placement patches {what}, which this "
            f"Keras does not have. Received: keras=={keras.__version__}, "
            f"tensorflow=={tf.__version__}; checked on "
            f"keras=={CHECKED_VERSIONS['keras']}, "
            f"tensorflow=={CHECKED_VERSIONS['tensorflow']}. Install those "
            "versions, or a parallel_keras release that supports this Keras."
        ) from error


def _placement_module(name: str):
    """Imports a private Keras module the placement hooks patch, loudly."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise PlacementInternalsChanged(
            f"parallel_keras's device placement patches {name}, which this "
            f"Keras does not have. Received: keras=={keras.__version__}, "
            f"tensorflow=={tf.__version__}; checked on "
            f"keras=={CHECKED_VERSIONS['keras']}, "
            f"tensorflow=={CHECKED_VERSIONS['tensorflow']}. Install those "
            "versions, or a parallel_keras release that supports this Keras."
        ) from error


def install_node_created_hook(hook: Callable[[object], None]) -> None:
    """Calls `hook(node)` after every non-input Keras `Node` is created."""
    node_module = _placement_module("keras.src.ops.node")
    node_class = _placement_internal(node_module, "Node", "keras.src.ops.node.Node")
    if "node_created" in _placement_hooks:
        _placement_hooks["node_created"] = hook
        return
    original_init = node_class.__init__

    def init_then_notify(node, *args, **kwargs):
        original_init(node, *args, **kwargs)
        if not node.is_input:
            _placement_hooks["node_created"](node)

    init_then_notify.__wrapped__ = original_init
    _placement_hooks["node_created"] = hook
    node_class.__init__ = init_then_notify


def install_operation_for_node_hook(hook: Callable[[object, object], object]) -> None:
    """Lets `hook(node, operation)` replace the callable run for each node."""
    function_module = _placement_module("keras.src.ops.function")
    function_class = _placement_internal(
        function_module, "Function", "keras.src.ops.function.Function"
    )
    original = _placement_internal(
        function_class, "_get_operation_for_node",
        "keras.src.ops.function.Function._get_operation_for_node",
    )
    if "operation_for_node" in _placement_hooks:
        _placement_hooks["operation_for_node"] = hook
        return

    def operation_for_node(function, node):
        return _placement_hooks["operation_for_node"](node, original(function, node))

    operation_for_node.__wrapped__ = original
    _placement_hooks["operation_for_node"] = hook
    function_class._get_operation_for_node = operation_for_node


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
    functional_module = _placement_module("keras.src.models.functional")
    functional_class = _placement_internal(
        functional_module, "Functional", "keras.src.models.functional.Functional"
    )
    original_get_config = _placement_internal(
        functional_class, "get_config", "Functional.get_config"
    )
    original_from_config = _placement_internal(
        functional_module, "functional_from_config",
        "keras.src.models.functional.functional_from_config",
    )
    first_install = "config" not in _placement_hooks
    _placement_hooks["config"] = (key, save, load)
    if not first_install:
        return

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
    functional_class.get_config = get_config
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


def keras_tensor_layer(tensor) -> keras.layers.Layer:
    """The layer that produced a symbolic KerasTensor (an InputLayer for inputs)."""
    return tensor._keras_history[0]


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
