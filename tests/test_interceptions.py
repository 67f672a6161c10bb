# SPDX-License-Identifier: Apache-2.0
"""What importing parallel_keras changes in Keras and TensorFlow: listed, minimal.

The subprocess cases compare every function and class attribute of the
Keras and TensorFlow modules a process loaded with the same in a process
that never imported parallel_keras: the differences must be exactly what
`parallel_keras.testing.installed_interceptions()` names.
"""

import json

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras._internals import interceptions

# What a legacy script with one import changed needs; nothing else at import.
AT_IMPORT = [
    "keras.src.models.model.Model.__init_subclass__",
    "keras.src.ops.node.Node.__init__",
    "keras.src.models.functional.functional_from_config",
]
# What the first layer call given a device adds.
AT_FIRST_PLACEMENT = [
    "keras.src.ops.function.Function._get_operation_for_node",
    "keras.src.models.functional.Functional.get_config",
]

# Prints, for every loaded `keras*`/`tensorflow*` module, where each of its
# functions and each attribute of its classes was defined: a wrapper made
# with functools.wraps keeps the wrapped `__qualname__` and `__module__`,
# not its code's file and line.
_SNAPSHOT = """
import json, sys, types

def origin(value):
    value = getattr(value, "__func__", value)
    value = getattr(value, "func", value)  # functools.partial(method)
    code = getattr(value, "__code__", None)
    if code is not None:
        return f"{code.co_filename}:{code.co_firstlineno}"
    return type(value).__qualname__

def snapshot():
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith(("keras", "tensorflow")) or module is None:
            continue
        try:
            members = list(vars(module).items())
        except TypeError:
            continue
        for attribute, value in members:
            if isinstance(value, types.FunctionType) and value.__module__ == name:
                found[f"{name}.{attribute}"] = origin(value)
            elif isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    if callable(inner) or hasattr(inner, "__func__") or hasattr(inner, "func"):
                        found[f"{name}.{value.__qualname__}.{member}"] = origin(inner)
    return found
"""

_TRAIN_UNPLACED = """
import numpy as np
inputs = keras.Input((3,))
outputs = keras.layers.Dense(1)(keras.layers.Dense(4, activation="relu")(inputs))
model = keras.Model(inputs, outputs)
model.compile("sgd", "mse")
model.fit(np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), epochs=1, verbose=0)
"""


def _run(code: str) -> dict:
    process = parallel_keras.testing.run_python(code)
    assert process.returncode == 0, process.stderr[-3000:]
    line = next(line for line in process.stdout.splitlines() if line.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])


def _keras_as_shipped(modules: list[str]) -> dict:
    """The snapshot of a process that never imports parallel_keras."""
    return _run(
        _SNAPSHOT
        + "import importlib\nimport keras\n"
        + _TRAIN_UNPLACED
        + f"""
for name in {modules!r}:
    try:
        importlib.import_module(name)
    except Exception:
        pass
assert "parallel_keras" not in sys.modules
print("RESULT" + json.dumps({{"snapshot": snapshot()}}))
"""
    )["snapshot"]


def _changed(with_parallel_keras: dict, shipped: dict) -> list[str]:
    return sorted(
        name
        for name in {*with_parallel_keras, *shipped}
        if with_parallel_keras.get(name) != shipped.get(name)
    )


@pytest.mark.subprocess
@pytest.mark.slow
def test_training_an_unplaced_model_finds_keras_as_shipped_but_the_listed_three():
    result = _run(
        _SNAPSHOT
        + "import parallel_keras\nimport keras\n"
        + _TRAIN_UNPLACED
        + """
listed = [entry.target for entry in parallel_keras.testing.installed_interceptions()]
modules = sorted(name for name in sys.modules if name.startswith(("keras", "tensorflow")))
print("RESULT" + json.dumps({"snapshot": snapshot(), "listed": listed, "modules": modules}))
"""
    )
    assert result["listed"] == AT_IMPORT
    shipped = _keras_as_shipped(result["modules"])
    assert len(shipped) > 10_000  # Keras's and TensorFlow's classes were walked.
    assert _changed(result["snapshot"], shipped) == sorted(AT_IMPORT)


@pytest.mark.subprocess
@pytest.mark.slow
def test_removing_every_listed_interception_gives_keras_back_as_shipped():
    result = _run(
        _SNAPSHOT
        + "import parallel_keras\nimport keras\nimport tensorflow as tf\n"
        + _TRAIN_UNPLACED
        + """
with tf.device("/cpu:0"):  # A legacy scope: the call-time hooks follow.
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).predict(np.ones((1, 3)), verbose=0)
listed = [entry.target for entry in parallel_keras.testing.installed_interceptions()]
for entry in parallel_keras.testing.installed_interceptions():
    entry.remove()
left = [entry.target for entry in parallel_keras.testing.installed_interceptions()]
modules = sorted(name for name in sys.modules if name.startswith(("keras", "tensorflow")))
print("RESULT" + json.dumps(
    {"snapshot": snapshot(), "listed": listed, "left": left, "modules": modules}))
"""
    )
    assert result["listed"] == AT_IMPORT + AT_FIRST_PLACEMENT
    assert result["left"] == []
    assert _changed(result["snapshot"], _keras_as_shipped(result["modules"])) == []


def test_call_time_hooks_wait_for_the_first_placed_layer_call():
    """In this process (conftest imports both) placement may already have
    run; removing the call-time hooks shows they come back with a placement."""
    for target in AT_FIRST_PLACEMENT:
        if interceptions.is_installed(target):
            interceptions.remove(target)
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).predict(np.ones((1, 3)), verbose=0)
    assert not any(interceptions.is_installed(target) for target in AT_FIRST_PLACEMENT)
    with parallel_keras.device("/cpu:1"):
        outputs = keras.layers.Dense(2, name="placed")(inputs)
    assert all(interceptions.is_installed(target) for target in AT_FIRST_PLACEMENT)
    model = keras.Model(inputs, outputs)
    assert model.get_config()["parallel_keras_placement"] == {"placed": ["/cpu:1"]}
    assert [call.device for call in parallel_keras.placement(model)] == ["/cpu:1"]


def test_the_listing_names_what_by_whom_when_why_and_how_to_remove():
    text = parallel_keras.testing.describe_interceptions()
    entries = {entry.target: entry for entry in parallel_keras.testing.installed_interceptions()}
    node_init = entries["keras.src.ops.node.Node.__init__"]
    assert node_init.change == "wrapped"
    assert node_init.by == "parallel_keras.device_placement.scope"
    assert node_init.when == interceptions.AT_KERAS_IMPORT
    assert "tf.device" in node_init.why
    init_subclass = entries["keras.src.models.model.Model.__init_subclass__"]
    assert init_subclass.change == "added"  # Keras's MRO has only object's.
    assert init_subclass.by == "parallel_keras.data_parallel.wrapper_classes"
    assert init_subclass.when == interceptions.AT_KERAS_IMPORT
    assert "multi_gpu_model" in init_subclass.why
    for entry in entries.values():
        assert entry.target in text and entry.why in text and entry.how_to_remove in text


def test_patch_and_remove_restore_an_attribute_and_delete_an_added_one():
    class Shipped:
        def method(self):
            return "shipped"

    wrapped = interceptions.patch(
        Shipped, "method", lambda self: "patched", by=__name__, when="now", why="A test."
    )
    interceptions.patch(Shipped, "method", lambda self: "again", by=__name__, when="now", why="")
    added = interceptions.patch(
        Shipped, "extra", lambda self: 1, by=__name__, when="now", why="A test."
    )
    assert (wrapped.change, added.change) == ("wrapped", "added")
    assert Shipped().method() == "again"
    interceptions.remove(wrapped.target)
    added.remove()
    assert Shipped().method() == "shipped"  # The original, not the first patch.
    assert not hasattr(Shipped, "extra")
    assert not interceptions.is_installed(wrapped.target)
    with pytest.raises(KeyError, match="has not replaced"):
        interceptions.remove(wrapped.target)


@pytest.mark.subprocess
def test_nothing_is_listed_and_tensorflow_stays_unimported_before_keras():
    code = """
        import sys
        import parallel_keras
        print(parallel_keras.testing.describe_interceptions())
        print("RESULT", "tensorflow" in sys.modules, "keras" in sys.modules)
    """
    process = parallel_keras.testing.run_python(code)
    assert process.returncode == 0, process.stderr[-3000:]
    assert "replaced nothing" in process.stdout
    assert process.stdout.split()[-3:] == ["RESULT", "False", "False"]


def test_parallel_keras_device_reinstalls_a_removed_recorder():
    from parallel_keras.device_placement import scope

    interceptions.remove("keras.src.ops.node.Node.__init__")
    try:
        inputs = keras.Input((3,))
        with parallel_keras.device("/cpu:1"):
            outputs = keras.layers.Dense(2)(inputs)
        model = keras.Model(inputs, outputs)
        assert [call.device for call in parallel_keras.placement(model)] == ["/cpu:1"]
    finally:
        scope._install_recorder()
    assert interceptions.is_installed("keras.src.ops.node.Node.__init__")


def test_a_parallel_fit_lists_the_trainer_surfaces_it_replaced():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    parallel = parallel_keras.multi_gpu_model(model, gpus=2)
    parallel.compile(optimizer="sgd", loss="mse")
    parallel.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), verbose=0)
    entries = {entry.target: entry for entry in parallel_keras.testing.installed_interceptions()}
    epoch_iterator = entries["keras.src.backend.tensorflow.trainer.TFEpochIterator.__init__"]
    assert epoch_iterator.by == "parallel_keras._internals.epoch_iterator"
    assert "Python data" in epoch_iterator.why
    symbolic_build = entries[
        "parallel_keras.data_parallel.parallel_model.ParallelModel._maybe_symbolic_build"
    ]
    assert symbolic_build.change == "added"  # ParallelModel's own, over Keras's inherited one.
