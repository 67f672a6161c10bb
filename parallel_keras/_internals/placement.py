# SPDX-License-Identifier: Apache-2.0
"""Device placement of functional layer calls.

Upstream surface: Keras's `keras.src.ops.node.Node`,
`keras.src.ops.function.Function` (`_get_operation_for_node`,
`_run_through_graph`, `_nodes`, `_nodes_by_depth`, `make_node_key`) and
`keras.src.models.functional` (`Functional.get_config`,
`functional_from_config`), and TensorFlow's eager context for the open
`tf.device` scope (`tensorflow.python.eager.context`), read by the node hook
so that plain `tf.device` scopes place layer calls too. A moved attribute
raises `PlacementInternalsChanged` naming the checked versions.

Checked on Keras 3.11.3 and 3.15.1 (one shape); on Keras 3.5.0, 3.8.0 and
3.10.0, which lack `Function._get_operation_for_node`, device placement
raises `PlacementNeedsNewerKeras` at first use. `tests/internals/
test_placement.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from parallel_keras._environment import keras_requirement
from parallel_keras._internals import interceptions
from parallel_keras._internals.versions import CHECKED_VERSIONS

# --- Device placement of functional layer calls -----------------
#
# A Keras 3 functional model records each layer call made while it is built
# as a `keras.src.ops.node.Node` (appended to `layer._inbound_nodes`) and, at
# call time, re-runs those calls in `Function._run_through_graph`, outside
# any `tf.device` scope they were built in, so that placement is lost. These
# private touches give `parallel_keras.device` its effect. Each replacement
# goes through `interceptions.patch` (listed by `interceptions.installed()`);
# the caller says when: 1 and the load side of 3 at Keras import, 2 and the
# save side of 3 at the first layer call given a device. All checked on
# TF 2.21 / Keras 3.15; `tests/internals/test_placement.py` fails loudly when
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
# 5. The `tf.device` scope open when a node is created (hook 1 reads it):
#    TensorFlow keeps it, in eager mode, only in the private eager context
#    (`tensorflow.python.eager.context.context().device_name`, TF 2.16 to
#    2.21), as the fully qualified name `tf.device` merged in. Keras builds
#    functional models eagerly; a scope opened while a graph is the default
#    (inside a `tf.function`) is not seen.

_placement_hooks: dict[str, Any] = {}

# What the hooks replace, as `interceptions.installed()` names them.
NODE_INIT = "keras.src.ops.node.Node.__init__"
OPERATION_FOR_NODE = "keras.src.ops.function.Function._get_operation_for_node"
GET_CONFIG = "keras.src.models.functional.Functional.get_config"
FROM_CONFIG = "keras.src.models.functional.functional_from_config"


def _by(hook: Callable[..., object]) -> str:
    return getattr(hook, "__module__", None) or __name__


class PlacementInternalsChanged(RuntimeError):
    """This Keras moved what the device-placement hooks patch."""


class PlacementNeedsNewerKeras(PlacementInternalsChanged):
    """This Keras is older than the first with what device placement needs."""


# `Function._get_operation_for_node` (hook 2 above) arrived in Keras 3.11:
# on 3.5.0, 3.8.0 and 3.10.0 `_run_through_graph` calls `operation_fn(
# node.operation)` with no node to look the placement up by, so a placed
# call cannot run inside its `tf.device`. Device placement is then refused
# at first use, before anything is patched; the rest of parallel_keras works.
PLACEMENT_MIN_KERAS = (3, 11)


def _keras_major_minor() -> tuple[int, int]:
    major, minor = (int(number) for number in re.findall(r"\d+", keras.__version__)[:2])
    return major, minor


def _internals_changed(what: str) -> PlacementInternalsChanged:
    """The error for a Keras that no longer has `what`, naming the versions."""
    if _keras_major_minor() < PLACEMENT_MIN_KERAS:
        low = ".".join(map(str, PLACEMENT_MIN_KERAS))
        return PlacementNeedsNewerKeras(
            f"Device placement (parallel_keras.device, place_branches, and a "
            f"placement saved in a model file) needs Keras {low} or newer, the "
            f"first whose functional models run each layer call through "
            f"{what}. Received: keras=={keras.__version__}. Upgrade: pip install "
            f"{keras_requirement(PLACEMENT_MIN_KERAS)}. Everything else in parallel_keras works on "
            "this Keras."
        )
    return PlacementInternalsChanged(
        f"parallel_keras's device placement patches {what}, which this "
        f"Keras does not have. Received: keras=={keras.__version__}, "
        f"tensorflow=={tf.__version__}; checked on "
        f"keras=={CHECKED_VERSIONS['keras']}, "
        f"tensorflow=={CHECKED_VERSIONS['tensorflow']}. Install those "
        "versions, or a parallel_keras release that supports this Keras."
    )


def _placement_internal(owner: object, attribute: str, what: str):
    """`owner.attribute`, or a loud error naming the upgrade that moved it.

    Never swallowed: a model loaded without these hooks would silently lose
    its saved placement (see `parallel_keras._placement_hooks`).
    """
    try:
        return getattr(owner, attribute)
    except AttributeError as error:
        raise _internals_changed(what) from error


def _placement_module(name: str):
    """Imports a private Keras module the placement hooks patch, loudly."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise _internals_changed(name) from error


def require_placement_support() -> None:
    """Raises `PlacementNeedsNewerKeras` on a Keras without what placement needs.

    Called first by every hook installer, so that nothing is patched on such
    a Keras.
    """
    function_module = _placement_module("keras.src.ops.function")
    function_class = _placement_internal(
        function_module, "Function", "keras.src.ops.function.Function"
    )
    _placement_internal(
        function_class,
        "_get_operation_for_node",
        "keras.src.ops.function.Function._get_operation_for_node",
    )


def install_node_created_hook(hook: Callable[[object], None], *, when: str) -> None:
    """Calls `hook(node)` after every non-input Keras `Node` is created."""
    require_placement_support()
    node_module = _placement_module("keras.src.ops.node")
    node_class = _placement_internal(node_module, "Node", "keras.src.ops.node.Node")
    _placement_hooks["node_created"] = hook
    if interceptions.is_installed(NODE_INIT):
        return
    original_init = node_class.__init__

    def init_then_notify(node, *args, **kwargs):
        original_init(node, *args, **kwargs)
        if not node.is_input:
            _placement_hooks["node_created"](node)

    functools.update_wrapper(init_then_notify, original_init)
    interceptions.patch(
        node_class,
        "__init__",
        init_then_notify,
        by=_by(hook),
        when=when,
        why="Records the device scope (tf.device or parallel_keras.device) open "
        "while each functional layer call is made; Keras 3 drops it.",
    )


def tf_device_scope() -> str | None:
    """The device of the innermost `tf.device` scope open now (eager), or None.

    Fully qualified as TensorFlow merged it, e.g.
    `'/job:localhost/replica:0/task:0/device:GPU:1'`.
    """
    from tensorflow.python.eager import context

    if not tf.executing_eagerly():
        return None
    return context.context().device_name or None


def install_operation_for_node_hook(hook: Callable[[object, object], object], *, when: str) -> None:
    """Lets `hook(node, operation)` replace the callable run for each node."""
    require_placement_support()
    function_module = _placement_module("keras.src.ops.function")
    function_class = _placement_internal(
        function_module, "Function", "keras.src.ops.function.Function"
    )
    original = _placement_internal(
        function_class,
        "_get_operation_for_node",
        "keras.src.ops.function.Function._get_operation_for_node",
    )
    _placement_hooks["operation_for_node"] = hook
    if interceptions.is_installed(OPERATION_FOR_NODE):
        return

    def operation_for_node(function, node):
        return _placement_hooks["operation_for_node"](node, original(function, node))

    functools.update_wrapper(operation_for_node, original)
    interceptions.patch(
        function_class,
        "_get_operation_for_node",
        operation_for_node,
        by=_by(hook),
        when=when,
        why="Runs each placed layer call of a functional model inside "
        "tf.device(<its recorded device>) whenever the model runs.",
    )


def install_functional_config_hooks(
    key: str,
    *,
    save: Callable[[keras.Model], object] | None = None,
    load: Callable[[keras.Model, object], None] | None = None,
    when: str,
) -> None:
    """Adds `save(model)` under `config[key]`; `load(model, value)` on load.

    Each side is installed only when given: loading must see the key from
    the first `load_model`, saving matters only once a placement exists.
    `save` returning None leaves the config exactly as Keras wrote it. The
    load side wraps `functional_from_config`, which `Model.from_config`
    (and so `.keras` loading, `Functional.from_config` and
    `keras.Model.from_config`) imports at call time.
    """
    require_placement_support()
    functional_module = _placement_module("keras.src.models.functional")
    functional_class = _placement_internal(
        functional_module, "Functional", "keras.src.models.functional.Functional"
    )
    original_get_config = _placement_internal(
        functional_class, "get_config", "Functional.get_config"
    )
    original_from_config = _placement_internal(
        functional_module,
        "functional_from_config",
        "keras.src.models.functional.functional_from_config",
    )
    if save is not None:
        _placement_hooks["config_save"] = (key, save)
        if not interceptions.is_installed(GET_CONFIG):

            def get_config(model):
                config = original_get_config(model)
                key, save = _placement_hooks["config_save"]
                value = save(model)
                if value is not None:
                    config[key] = value
                return config

            functools.update_wrapper(get_config, original_get_config)
            interceptions.patch(
                functional_class,
                "get_config",
                get_config,
                by=_by(save),
                when=when,
                why=f"Writes a placed model's devices under config[{key!r}] "
                "(.keras, to_json); unplaced models keep Keras's config.",
            )
    if load is not None:
        _placement_hooks["config_load"] = (key, load)
        if not interceptions.is_installed(FROM_CONFIG):

            def functional_from_config(cls, config, custom_objects=None):
                key, load = _placement_hooks["config_load"]
                config = dict(config)
                value = config.pop(key, None)
                model = original_from_config(cls, config, custom_objects=custom_objects)
                if value is not None:
                    load(model, value)
                return model

            functools.update_wrapper(functional_from_config, original_from_config)
            interceptions.patch(
                functional_module,
                "functional_from_config",
                functional_from_config,
                by=_by(load),
                when=when,
                why=f"Gives a loaded model back the placement saved under "
                f"config[{key!r}], on a plain keras.models.load_model.",
            )


def is_functional(model: object) -> bool:
    """True for models built as `keras.Model(inputs, outputs)` (Functional)."""
    from keras.src.models.functional import Functional

    return isinstance(model, Functional)


def functional_layer_calls(model: keras.Model) -> list[tuple[object, int, object]]:
    """`(layer, call_index, node)` for each layer call of a functional model.

    In the order the model runs them (deepest first, as
    `_run_through_graph`). `call_index` numbers the calls of a layer that
    belong to this model, as `Functional.get_config` does (a nested
    functional model's own first node counts as call 0), so it is the same
    before saving and after loading.
    """
    from keras.src.models.functional import Functional
    from keras.src.ops.function import make_node_key

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


def keras_tensor_layer(tensor: keras.KerasTensor) -> keras.layers.Layer:
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
