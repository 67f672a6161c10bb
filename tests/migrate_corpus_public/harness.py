# SPDX-License-Identifier: Apache-2.0
"""The child processes that run one migrated public project and reload its files.

`python harness.py train SPEC.json` runs in the project's migrated copy (the
working folder) on 4 simulated devices:

* the project's own `setup` code runs first (tiny data files at the paths the
  project reads, its data-loading functions replaced by tiny random arrays of
  the right shapes); that, `argv` and the caps below are all the harness
  changes;
* caps: every `fit` trains `epochs` (default 1) epochs from its
  `initial_epoch` and at most `steps` (default 2) steps per epoch, validation
  and `evaluate`/`predict` at most 1 step when they take steps;
* it observes, without changing them, the models `fit`/`train_on_batch`
  train and the files `save`/`save_weights` write, and records each trained
  template's architecture and its predictions on a probe batch.

`python harness.py load SPEC.json` runs in a fresh process with plain Keras on
one device and reloads every model or weights file the run wrote (under the
working folder, newer than the start): `keras.models.load_model` for a whole
model, else the recorded architecture and `load_weights`. When the newest
file holds the last trained template, its predictions must equal the
template's (atol 1e-5). It writes `_harness_load.json`; the parent reads both
reports.
"""

from __future__ import annotations

import glob
import inspect
import json
import os
import runpy
import sys
import time
import traceback

SAVED_SUFFIXES = (".h5", ".hdf5", ".keras", ".weights.h5", ".hd5", ".model")
# Files the harness itself writes: never counted as the project's.
OWN = ("_harness_", "_probe")


class ModelShapedData:
    """Tiny random batches shaped like the inputs and outputs of the model `fit` trains.

    A project's data generator is replaced by this; `fit` turns it into arrays
    of `rows` samples (the shapes come from the model, so no file is read).
    `y` overrides the target shapes (without the batch axis) where the loss
    takes other shapes than the outputs; `int_y` draws integer targets below it.
    `agree` makes the targets the model's own predictions (one-hot where an
    output is a distribution), for a project that saves only when validation
    accuracy beats 0, which real data does and random labels may not.
    """

    def __init__(self, rows=16, y=None, int_y=0, size=32, agree=False):
        self.rows, self.y, self.int_y, self.size = rows, y, int_y, size
        self.agree = agree

    def arrays(self, model, np):
        rng = np.random.default_rng(0)

        def draw(shape, dtype):
            shape = (self.rows,) + tuple(self.size if d is None else d for d in shape)
            if "int" in str(dtype):
                return rng.integers(0, 4, shape).astype(str(dtype))
            return rng.random(shape).astype("float32")

        x = [draw(t.shape[1:], t.dtype) for t in model.inputs]
        if self.agree:
            predicted = model.predict(x[0] if len(x) == 1 else x, verbose=0)
            predicted = predicted if isinstance(predicted, list) else [predicted]
            y = [
                np.eye(p.shape[-1], dtype="float32")[p.argmax(-1)] if p.shape[-1] > 1 else p
                for p in predicted
            ]
            return (x[0] if len(x) == 1 else x), (y[0] if len(y) == 1 else y)
        targets = self.y or [tuple(t.shape[1:]) for t in model.outputs]
        if self.int_y:
            y = [rng.integers(0, self.int_y, (self.rows,) + tuple(shape)) for shape in targets]
        else:
            y = [draw(shape, "float32") for shape in targets]
        return (x[0] if len(x) == 1 else x), (y[0] if len(y) == 1 else y)


def stub_module(name, **attributes):
    """Puts a module made of `attributes` in sys.modules (a project's data loader)."""
    import types

    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


def _saved_files(since: float) -> list[str]:
    found = []
    for path in glob.glob("**/*", recursive=True):
        name = os.path.basename(path)
        if name.startswith(OWN) or not os.path.isfile(path):
            continue
        if path.endswith(SAVED_SUFFIXES) and os.path.getmtime(path) >= since:
            found.append(path)
    return sorted(found, key=os.path.getmtime)


def _arguments(signature, self, args, kwargs):
    """Every argument by name, the var-keyword ones spread out again."""
    arguments = dict(signature.bind(self, *args, **kwargs).arguments)
    arguments.pop("self")
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(arguments.pop(parameter.name, {}))
    return arguments


def _cap_training(keras, spec, trained):
    import numpy as np

    import parallel_keras

    max_epochs = spec.get("epochs", 1)
    max_steps = spec.get("steps", 2)

    # Keras's own signatures name every argument (the parallel model's take **kwargs).
    signatures = {
        name: inspect.signature(getattr(keras.Model, name))
        for name in ("fit", "evaluate", "predict")
    }

    def capped_fit(original):
        signature = signatures["fit"]

        def fit(self, *args, **kwargs):
            arguments = _arguments(signature, self, args, kwargs)
            for key in ("x", "validation_data"):
                if isinstance(arguments.get(key), ModelShapedData):
                    data_x, data_y = arguments[key].arrays(self, np)
                    if key == "x":
                        arguments["x"], arguments["y"] = data_x, data_y
                        arguments.pop("steps_per_epoch", None)
                        arguments["batch_size"] = 8
                    else:
                        arguments["validation_data"] = (data_x, data_y)
                        arguments.pop("validation_steps", None)
            initial = arguments.get("initial_epoch", 0) or 0
            epochs = arguments.get("epochs", 1)
            arguments["epochs"] = min(epochs, initial + max_epochs)
            steps = arguments.get("steps_per_epoch")
            x = arguments.get("x")
            if steps is not None:
                arguments["steps_per_epoch"] = min(steps, max_steps)
            elif x is not None and not hasattr(x, "shape") and not isinstance(x, list | dict):
                arguments["steps_per_epoch"] = max_steps
            if arguments.get("validation_steps") is not None:
                arguments["validation_steps"] = 1
            elif arguments.get("validation_data") is not None and not isinstance(
                arguments["validation_data"], tuple | list
            ):
                arguments["validation_steps"] = 1
            trained.append(self)
            return original(self, **arguments)

        return fit

    def capped_steps(original, name):
        signature = signatures[name]

        def run(self, *args, **kwargs):
            arguments = _arguments(signature, self, args, kwargs)
            if isinstance(arguments.get("x"), ModelShapedData):
                arguments["x"], arguments["y"] = arguments["x"].arrays(self, np)
                if name == "predict":
                    arguments.pop("y")
                arguments.pop("steps", None)
            if arguments.get("steps") is not None:
                arguments["steps"] = 1
            return original(self, **arguments)

        return run

    def observed(original):
        def train_on_batch(self, *args, **kwargs):
            trained.append(self)
            return original(self, *args, **kwargs)

        return train_on_batch

    def recorded(original):
        # A model saved without a fit (a project's driver that builds and
        # saves) is recorded too: its architecture is what the file reloads into.
        def save(self, *args, **kwargs):
            if self not in trained:
                trained.insert(0, self)
            return original(self, *args, **kwargs)

        return save

    # migrate wraps a Sequence given with steps_per_epoch in
    # parallel_keras.repeat_sequence; the stand-in data is arrays already.
    repeat = parallel_keras.repeat_sequence

    def repeat_sequence(sequence, steps):
        return sequence if isinstance(sequence, ModelShapedData) else repeat(sequence, steps)

    parallel_keras.repeat_sequence = repeat_sequence

    owners = [keras.Model, getattr(parallel_keras, "ParallelModel", None)]
    for owner in owners:
        if owner is None:
            continue
        # Inherited methods too: keras.Model's fit lives on its trainer base class.
        owner.fit = capped_fit(owner.fit)
        owner.train_on_batch = observed(owner.train_on_batch)
        owner.save_weights = recorded(owner.save_weights)
        owner.save = recorded(owner.save)
        for method in ("evaluate", "predict"):
            setattr(owner, method, capped_steps(getattr(owner, method), method))


def _no_downloads(keras):
    """Pretrained weights are data: every keras.applications model starts from scratch."""
    import functools
    import types

    # `keras.applications.X` and `keras.applications.<module>.X` alike.
    modules = [keras.applications] + [
        value for value in vars(keras.applications).values() if isinstance(value, types.ModuleType)
    ]
    for module in modules:
        for name in dir(module):
            constructor = getattr(module, name)
            if not (name[:1].isupper() and callable(constructor)):
                continue

            def scratch(*args, __constructor=constructor, **kwargs):
                weights = kwargs.get("weights")
                if weights is not None and not str(weights).endswith(".h5"):
                    kwargs["weights"] = None
                return __constructor(*args, **kwargs)

            setattr(module, name, functools.wraps(constructor)(scratch))


def _probe(template, rng, spec):
    size = spec.get("probe_size", 8)
    batch = spec.get("probe_batch", 4)
    probe = []
    for tensor in template.inputs:
        shape = (batch,) + tuple(size if dim is None else dim for dim in tensor.shape[1:])
        if "int" in str(tensor.dtype):
            probe.append(rng.integers(0, 4, shape).astype(str(tensor.dtype)))
        else:
            probe.append(rng.random(shape).astype("float32"))
    return probe


def train(spec: dict) -> None:
    import numpy as np

    import parallel_keras

    parallel_keras.simulate_devices(spec.get("devices", 4))
    import keras

    started = time.time() - 1
    trained: list = []
    _cap_training(keras, spec, trained)
    _no_downloads(keras)
    project = os.getcwd()
    sys.path.insert(0, project)
    for extra in spec.get("path", []):
        sys.path.insert(0, os.path.join(project, extra))
    namespace = {
        "np": np,
        "keras": keras,
        "os": os,
        "sys": sys,
        "ModelShapedData": ModelShapedData,
        "stub_module": stub_module,
    }
    exec(spec.get("setup", ""), namespace)  # noqa: S102 - the project's data stubs
    started = max(started, time.time() - 1)
    # Files the setup wrote (data, pretrained stand-ins) are not the project's saves.
    before = {path: os.path.getmtime(path) for path in _saved_files(0)}
    entry = spec["entry"]
    os.chdir(os.path.join(project, spec.get("cwd", ".")))
    try:
        if entry.startswith("-m "):
            sys.argv = [entry[3:], *spec.get("argv", [])]
            runpy.run_module(entry[3:], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [entry, *spec.get("argv", [])]
            # As `python entry.py` does: the script's folder comes first on the path.
            sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
            runpy.run_path(os.path.abspath(entry), run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
    os.chdir(project)
    record: dict = {"trained": [], "started": started}
    rng = np.random.default_rng(0)
    seen = set()
    for model in reversed(trained):
        template = getattr(model, "template", model)
        if id(template) in seen:
            continue
        seen.add(id(template))
        entry_record: dict = {"name": template.name}
        try:
            entry_record["json"] = template.to_json()
        except Exception as error:  # noqa: BLE001 - reported, not fatal
            entry_record["json_error"] = repr(error)
        try:
            probe = _probe(template, rng, spec)
            predictions = template.predict(probe if len(probe) > 1 else probe[0], verbose=0)
            index = len(record["trained"])
            np.savez(f"_probe{index}.npz", *probe)
            np.savez(f"_harness_expected{index}.npz", *keras.tree.flatten(predictions))
            entry_record["probe"] = index
        except Exception as error:  # noqa: BLE001 - reported, not fatal
            entry_record["probe_error"] = repr(error)
        record["trained"].append(entry_record)
    record["saved"] = [
        path for path in _saved_files(started) if before.get(path) != os.path.getmtime(path)
    ]
    with open("_harness_train.json", "w") as file:
        json.dump(record, file)


def load(spec: dict) -> None:
    import keras
    import numpy as np

    sys.path.insert(0, os.getcwd())
    with open("_harness_train.json") as file:
        record = json.load(file)
    # The files are the project's own, written by the training process: a
    # Lambda layer's Python code in them is trusted, as Keras 2 trusted it
    # (`safe_mode=False` below as well: Keras 3.15, unlike 3.5, reads a legacy
    # .h5 file in safe mode unless the call says otherwise).
    keras.config.enable_unsafe_deserialization()
    namespace: dict = {
        "np": np,
        "keras": keras,
        "os": os,
        "custom_objects": None,
        "rebuild": None,
    }
    exec(spec.get("load_setup", ""), namespace)  # noqa: S102 - the project's custom layers
    custom_objects = namespace["custom_objects"]
    results = []
    for path in record["saved"]:
        result: dict = {"path": path}
        errors = []
        loaded = None
        try:
            loaded = keras.models.load_model(
                path, compile=False, custom_objects=custom_objects, safe_mode=False
            )
            result["as"] = "model"
        except Exception as error:  # noqa: BLE001 - next way of loading
            errors.append(f"load_model: {error!r}"[:400])
        if loaded is None:
            for index, trained in enumerate(record["trained"]):
                if "json" not in trained:
                    continue
                try:
                    candidate = keras.models.model_from_json(
                        trained["json"], custom_objects=custom_objects
                    )
                    candidate.load_weights(path)
                except Exception as error:  # noqa: BLE001 - next candidate
                    errors.append(f"weights into {trained['name']}: {error!r}"[:400])
                    continue
                loaded = candidate
                result["as"] = f"weights of {trained['name']}"
                result["template"] = index
                break
        if loaded is None and namespace.get("rebuild") is not None:
            # A weights file of an architecture Keras cannot record (a Lambda
            # closing over a project object) loads into the project's own
            # builder on one device, as Keras 2 scripts reloaded them.
            try:
                candidate = namespace["rebuild"]()
                candidate.load_weights(path)
                loaded = candidate
                result["as"] = "weights of the project's rebuilt model"
            except Exception as error:  # noqa: BLE001 - reported
                errors.append(f"weights into the rebuilt model: {error!r}"[:400])
        if loaded is None:
            result["errors"] = errors
        else:
            result["loaded"] = True
            result["compared"] = _compare(loaded, record, np, keras)
        results.append(result)
    with open("_harness_load.json", "w") as file:
        json.dump(results, file)


def _compare(loaded, record, np, keras):
    """Max difference from the trained template with the same architecture."""
    for index, trained in enumerate(record["trained"]):
        if "probe" not in trained:
            continue
        probe = list(np.load(f"_probe{trained['probe']}.npz").values())
        if len(probe) != len(loaded.inputs):
            continue
        try:
            got = keras.tree.flatten(
                loaded.predict(probe if len(probe) > 1 else probe[0], verbose=0)
            )
        except Exception:  # noqa: BLE001 - another architecture
            continue
        want = list(np.load(f"_harness_expected{trained['probe']}.npz").values())
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            continue
        return {
            "template": index,
            "max_abs_diff": float(max(np.max(np.abs(g - w)) for g, w in zip(got, want))),
        }
    return None


def main() -> None:
    mode, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as file:
        spec = json.load(file)
    try:
        (train if mode == "train" else load)(spec)
    except BaseException:  # noqa: BLE001 - the parent reads the traceback
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
