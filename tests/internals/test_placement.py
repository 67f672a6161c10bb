# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.placement` (Keras 3.5 to 3.15).

A failure here means an upgrade changed the private Keras behaviour
`parallel_keras.device` relies on: see parallel_keras/_internals/placement.py.
From Keras 3.11 the hooks are installed and place calls; below, placement is
refused at first use with the feature error and nothing is patched.
"""

import inspect
import re

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import _environment, _internals
from parallel_keras.testing import record_op_devices

_KERAS = tuple(int(part) for part in re.findall(r"\d+", keras.__version__)[:2])
_HAS_PLACEMENT = _KERAS >= (3, 11)
needs_placement = pytest.mark.skipif(
    not _HAS_PLACEMENT,
    reason=f"Keras {keras.__version__} has no Function._get_operation_for_node (3.11+); "
    "test_placement_is_refused_below_keras_3_11 covers it",
)


def test_the_placement_shape_is_the_one_this_keras_has():
    from keras.src.ops import function as function_module

    assert hasattr(function_module.Function, "_get_operation_for_node") == _HAS_PLACEMENT


@pytest.mark.skipif(_HAS_PLACEMENT, reason=f"Keras {keras.__version__} has placement")
def test_placement_is_refused_below_keras_3_11():
    """At first use: the feature, this Keras, the lowest with it, the fix."""
    from keras.src.models import functional as functional_module
    from keras.src.ops import node as node_module

    with pytest.raises(_internals.PlacementNeedsNewerKeras) as raised:
        parallel_keras.device("/cpu:1")
    message = str(raised.value)
    for part in (
        "Device placement",
        f"keras=={keras.__version__}",
        "Keras 3.11 or newer",
        f"pip install {_environment.keras_requirement((3, 11))}",
    ):
        assert part in message, message
    # Nothing half-patched: Keras's own classes are untouched.
    assert not hasattr(node_module.Node.__init__, "__wrapped__")
    assert not hasattr(functional_module.functional_from_config, "__wrapped__")
    assert not hasattr(functional_module.Functional.get_config, "__wrapped__")


@needs_placement
def test_node_init_is_wrapped_and_fires_once_per_symbolic_call():
    from keras.src.ops import node as node_module

    assert hasattr(node_module.Node.__init__, "__wrapped__"), (
        "parallel_keras's Node.__init__ hook is not installed"
    )
    layer = keras.layers.Dense(2)
    with parallel_keras.device("/cpu:1"):
        layer(keras.Input((3,)))
    assert len(layer._inbound_nodes) == 1
    from parallel_keras.device_placement import runtime

    assert runtime.requested_device(layer._inbound_nodes[0]) == "/cpu:1"


@needs_placement
def test_run_through_graph_asks_get_operation_for_node_for_each_call():
    from keras.src.ops import function as function_module

    source = inspect.getsource(function_module.Function._run_through_graph)
    assert "self._get_operation_for_node(node)" in source
    inputs = keras.Input((3,))
    with parallel_keras.device("/cpu:2"):
        outputs = keras.layers.Dense(2, name="hooked")(inputs)
    with record_op_devices() as ops:
        keras.Model(inputs, outputs)(np.ones((1, 3), np.float32))
    assert {
        r.device for r in ops.eager if "hooked" in r.name and r.op_type != "ReadVariableOp"
    } == {"/cpu:2"}


def test_model_from_config_imports_functional_from_config_at_call_time():
    from keras.src.models import model as model_module

    source = inspect.getsource(model_module.Model.from_config)
    assert "from keras.src.models.functional import functional_from_config" in source


def test_functional_init_ignores_unknown_config_keys():
    inputs = keras.Input((3,))
    config = keras.Model(inputs, keras.layers.Dense(2)(inputs)).get_config()
    config["some_future_key"] = {"x": 1}
    from keras.src.models import functional as functional_module

    hooked = functional_module.functional_from_config
    original = getattr(hooked, "__wrapped__", hooked)
    model = original(functional_module.Functional, config)
    assert model(np.ones((1, 3), np.float32)).shape == (1, 2)


@needs_placement
def test_layer_call_indices_match_get_config_renumbering():
    input_a, input_b = keras.Input((3,)), keras.Input((3,))
    shared = keras.layers.Dense(2, name="shared")
    shared(keras.Input((3,)))  # A call that belongs to no model below.
    model = keras.Model([input_a, input_b], [shared(input_a), shared(input_b)])
    calls = [(layer.name, index) for layer, index, _ in _internals.functional_layer_calls(model)]
    assert sorted(calls) == [("shared", 0), ("shared", 1)]
    layer_config = next(c for c in model.get_config()["layers"] if c["name"] == "shared")
    assert len(layer_config["inbound_nodes"]) == 2


@pytest.mark.subprocess
@needs_placement
def test_hooks_install_when_importing_internals_is_what_imports_keras():
    """The hooks use `_internals`; they wait for it instead of failing on a
    partially imported package."""
    process = parallel_keras.testing.run_python(
        """
        import warnings
        warnings.simplefilter("error", RuntimeWarning)
        import parallel_keras
        from parallel_keras import _internals
        from keras.src.ops import node
        installed = _internals.interceptions.is_installed("keras.src.ops.node.Node.__init__")
        print("RESULT", installed, hasattr(node.Node.__init__, "__wrapped__"))
        """,
    )
    assert process.stdout.split()[-3:] == ["RESULT", "True", "True"], process.stderr[-3000:]


def test_the_open_tf_device_scope_is_read_from_the_eager_context():
    """`tf_device_scope` reads TensorFlow's private eager context: the scope
    `tf.device` opened, fully qualified, even for a device this machine
    lacks (checked on TF 2.21)."""
    import tensorflow as tf

    assert _internals.tf_device_scope() is None
    with tf.device("/gpu:7"):
        scoped = _internals.tf_device_scope()
        with tf.device("/cpu:1"):
            inner = _internals.tf_device_scope()
    assert scoped is not None and scoped.endswith("/device:GPU:7")
    assert inner is not None and inner.endswith("/device:CPU:1")
    assert _internals.tf_device_scope() is None
