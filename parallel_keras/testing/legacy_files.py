# SPDX-License-Identifier: Apache-2.0
"""Keras 2 HDF5 files, written with h5py, for testing legacy loading.

Keras 2 is not installable next to Keras 3, so the files it wrote are built
here from a Keras 3 template, byte layout as Keras 2.2 wrote them
(`keras/engine/saving.py`: `save_weights_to_hdf5_group`,
`save_attributes_to_hdf5_group`; `keras/utils/multi_gpu_utils.py`):

* Root (weights file) or `/model_weights` (full-model file): attributes
  `layer_names` (one per layer of the saved model, in `model.layers`
  order), `backend` and `keras_version`, all as bytes.
* One group per layer, attribute `weight_names` (`b"dense_1/kernel:0"`; an
  empty array for weightless layers), each weight a dataset at
  `<layer group>/<weight name>`, so `dense_1/kernel:0` makes a subgroup.
* Layer names as Keras 2 numbered them in a fresh session: per type from 1
  (`dense_1`, `dense_2`, `batch_normalization_1`); explicit names kept.
* A `multi_gpu_model` parallel model's file lists the template's inputs
  (`input_1`; a Sequential's is `dense_1_input`), the weightless `lambda_*`
  slicing layers (one per GPU and input), ONE group named after the template
  (`model_1`, `sequential_1`) holding every template weight, trainable
  weights first and non-trainable ones after (Keras 2's
  `Network.weights`), so moving statistics and frozen layers come last,
  and the weightless concatenate layers named after the template's outputs.
* A full-model file (`model.save`) also has root attributes `keras_version`,
  `backend`, `model_config` (JSON; Lambda layers carry their function as
  base64 marshalled bytecode, which loading must never run) and
  `training_config`.

Example:

>>> import keras
>>> from parallel_keras.testing import legacy_files
>>> template = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
>>> legacy_files.write_parallel_model_file("/tmp/multi.h5", template, gpus=2)  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import json
import marshal
import os
import re
from collections.abc import Callable

import h5py
import keras
import numpy as np

from parallel_keras.saving import matching

KERAS2_VERSION = "2.2.4"


def keras2_names(template: keras.Model) -> dict[str, str]:
    """Keras 3 layer name -> the name Keras 2 gave it in a fresh session."""
    counters: dict[str, int] = {}
    names = {}
    for layer in _all_layers(template):
        base = _snake_case(type(layer).__name__)
        if isinstance(layer, keras.layers.InputLayer):
            base = "input"
        if isinstance(layer, keras.layers.InputLayer) or re.fullmatch(
            rf"{re.escape(base)}(_\d+)?", layer.name
        ):
            counters[base] = counters.get(base, 0) + 1
            names[layer.name] = f"{base}_{counters[base]}"
        else:
            names[layer.name] = layer.name
    return names


def write_single_model_file(
    path: str | os.PathLike,
    template: keras.Model,
    *,
    full_model: bool = False,
    names: dict[str, str] | None = None,
) -> None:
    """Writes what Keras 2's `template.save_weights`/`save` wrote (`.h5`).

    Args:
        path: Output path.
        template: The model whose weights are written.
        full_model: Write the `model.save` layout (`/model_weights` plus a
            `model_config`). Defaults to False.
        names: Keras 3 layer name -> name in the file. Defaults to None
            (`keras2_names(template)`).
    """
    names = names or keras2_names(template)
    layers = []
    for layer in template.layers:
        # A nested model is one group holding its layers' weights.
        owners = matching.weighted_layers(layer) if isinstance(layer, keras.Model) else [layer]
        weights = [(w, owner) for owner in owners for w in owner.trainable_weights]
        weights += [(w, owner) for owner in owners for w in owner.non_trainable_weights]
        layers.append((names[layer.name], weights))
    _write(path, layers, names, full_model, config_layers=[n for n, _ in layers])


def write_parallel_model_file(
    path: str | os.PathLike,
    template: keras.Model,
    gpus: int = 2,
    *,
    full_model: bool = False,
    names: dict[str, str] | None = None,
    template_name: str | None = None,
    lambda_function: Callable | None = None,
) -> None:
    """Writes what Keras 2 wrote from `multi_gpu_model(template, gpus)`.

    Args:
        path: Output path.
        template: The template whose weights are written.
        gpus: Number of replicas (one `lambda_*` layer per GPU and input).
            Defaults to 2.
        full_model: Write the `model.save` layout. Defaults to False.
        names: Keras 3 layer name -> name in the file. Defaults to None
            (`keras2_names(template)`).
        template_name: The template group's name. Defaults to None
            (`sequential_1` for a Sequential, else `model_1`).
        lambda_function: The function whose marshalled bytecode the full
            model's Lambda configs carry. Defaults to None (a `get_slice`).
    """
    names = names or keras2_names(template)
    sequential = isinstance(template, keras.Sequential)
    template_name = template_name or ("sequential_1" if sequential else "model_1")
    leaves = matching.weighted_layers(template)
    if sequential:
        inputs = [f"{names[template.layers[0].name]}_input"]
    else:
        inputs = [
            names[layer.name]
            for layer in template.layers
            if isinstance(layer, keras.layers.InputLayer)
        ]
    lambdas = [f"lambda_{i + 1}" for i in range(gpus * len(inputs))]
    # Keras 2's Network.weights: every trainable weight, then the rest.
    trainable = [(w, layer) for layer in leaves for w in layer.trainable_weights]
    frozen = [(w, layer) for layer in leaves for w in layer.non_trainable_weights]
    outputs = [names.get(name, name) for name in _output_names(template)]
    layers: list[tuple[str, list]] = (
        [(name, []) for name in inputs + lambdas]
        + [(template_name, trainable + frozen)]
        + [(name, []) for name in outputs]
    )
    _write(
        path,
        layers,
        names,
        full_model,
        config_layers=[n for n, _ in layers],
        lambda_function=lambda_function or _get_slice,
    )


def _write(path, layers, names, full_model, config_layers, lambda_function=None):
    with h5py.File(os.fspath(path), "w") as file:
        root = file
        if full_model:
            file.attrs["keras_version"] = KERAS2_VERSION.encode()
            file.attrs["backend"] = b"tensorflow"
            file.attrs["model_config"] = json.dumps(
                _model_config(config_layers, lambda_function)
            ).encode()
            file.attrs["training_config"] = json.dumps(
                {
                    "optimizer_config": {"class_name": "SGD", "config": {"lr": 0.01}},
                    "loss": "mse",
                    "metrics": [],
                }
            ).encode()
            root = file.create_group("model_weights")
        root.attrs["layer_names"] = [name.encode() for name, _ in layers]
        root.attrs["backend"] = b"tensorflow"
        root.attrs["keras_version"] = KERAS2_VERSION.encode()
        for name, weights in layers:
            group = root.create_group(name)
            weight_names = [f"{names[layer.name]}/{w.name}:0".encode() for w, layer in weights]
            group.attrs["weight_names"] = weight_names if weights else np.array([])
            for weight_name, (variable, _) in zip(weight_names, weights):
                value = np.asarray(variable.numpy())
                group.create_dataset(weight_name.decode(), data=value)


def _model_config(layer_names, lambda_function):
    layers = []
    for name in layer_names:
        if name.startswith("lambda_") and lambda_function is not None:
            code = base64.b64encode(marshal.dumps(lambda_function.__code__)).decode()
            layers.append(
                {
                    "class_name": "Lambda",
                    "name": name,
                    "config": {
                        "name": name,
                        "function": [code, None, None],
                        "function_type": "lambda",
                        "arguments": {"i": 0, "parts": 2},
                    },
                }
            )
        else:
            layers.append({"class_name": "Layer", "name": name, "config": {"name": name}})
    return {"class_name": "Model", "config": {"name": "model_2", "layers": layers}}


def _get_slice(data, i, parts):  # What Keras 2's multi_gpu_model marshalled.
    return data


def _all_layers(model: keras.Model):
    found = []
    for layer in model.layers:
        found.append(layer)
        if isinstance(layer, keras.Model):
            found.extend(_all_layers(layer))
    return found


def _output_names(model: keras.Model) -> list[str]:
    if isinstance(model, keras.Sequential):
        return [model.layers[-1].name]
    return list(model.output_names)


def _snake_case(name: str) -> str:
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


# The templates of the three fixture layouts. Each is self-contained (it
# imports keras itself) so tests can run its source, via inspect.getsource,
# in a fresh process that imports nothing from parallel_keras.


def sequential_template():
    """A Sequential: Dense(8, relu) -> Dense(3, softmax), input (6,)."""
    import keras

    return keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )


def functional_template():
    """Functional: Dense, BatchNormalization, a frozen Dense, Dense head."""
    import keras

    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8)(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    hidden = keras.layers.Activation("relu")(hidden)
    frozen = keras.layers.Dense(8, activation="tanh")
    frozen.trainable = False
    hidden = frozen(hidden)
    return keras.Model(inputs, keras.layers.Dense(3)(hidden))


def two_output_template():
    """Two outputs, `out_a` (2 units) and `out_b` (1 unit), on a shared Dense."""
    import keras

    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    out_a = keras.layers.Dense(2, name="out_a")(hidden)
    out_b = keras.layers.Dense(1, name="out_b")(hidden)
    return keras.Model(inputs, [out_a, out_b])


TEMPLATES = {
    "sequential": sequential_template,
    "functional": functional_template,
    "two_output": two_output_template,
}
