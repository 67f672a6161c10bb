# SPDX-License-Identifier: Apache-2.0
"""The models the suite trains, and the inputs each one takes.

Each model is the kind of network the legacy tutorials' readers train with
`multi_gpu_model`: a dense net, a small CNN, two `keras.applications`
networks (`weights=None`, so nothing is downloaded), and the legacy tutorials' own
two-branch shared-LSTM model, the one device-parallel example they give.

The builders import Keras inside the function: the parent process of the
suite plans runs with these names and never starts TensorFlow itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

# Kinds of input: what a batch looks like to the model.
VECTOR = "vector"
IMAGE = "image"
SEQUENCE = "sequence"
TWO_SEQUENCES = "two_sequences"


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """The shape of one example as the model sees it.

    Attributes:
        kind: `"vector"`, `"image"`, `"sequence"` or `"two_sequences"` (two
            inputs of the same shape, one per branch).
        shape: Shape of one example of one input, without the batch axis.
        num_classes: Number of classes of the integer labels.
    """

    kind: str
    shape: tuple[int, ...]
    num_classes: int


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What the suite knows about a model before building it."""

    name: str
    kind: str
    full_input: tuple[int, ...]
    quick_input: tuple[int, ...]
    full_classes: int
    min_image_side: int = 1
    # Independent branches that device parallelism can spread over devices.
    branches: int = 1
    # Outputs, each trained on the same integer labels.
    outputs: int = 1
    # A stateful RNN: built for a fixed batch per replica.
    stateful: bool = False


MODELS: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        ModelInfo("mlp", VECTOR, (784,), (784,), 10),
        ModelInfo("cnn", IMAGE, (32, 32, 3), (32, 32, 3), 10),
        # keras.applications refuses inputs below these sides.
        ModelInfo("resnet50", IMAGE, (224, 224, 3), (32, 32, 3), 1000, 32),
        ModelInfo("xception", IMAGE, (299, 299, 3), (71, 71, 3), 1000, 71),
        # The legacy tutorials' example: two sequences of 140 steps x 256 features.
        ModelInfo("two_branch_lstm", TWO_SEQUENCES, (140, 256), (16, 32), 10, branches=2),
        # Two heads on a shared trunk, as multi-task legacy scripts have.
        ModelInfo("multi_output", VECTOR, (784,), (784,), 10, outputs=2),
        # A stateful LSTM carrying each row's state across batches.
        ModelInfo("stateful_lstm", SEQUENCE, (100, 64), (16, 32), 10, stateful=True),
    )
}


def check_names(names: Sequence[str]) -> list[str]:
    """Validates model names.

    Raises:
        ValueError: If a name is not a known model.
    """
    unknown = [name for name in names if name not in MODELS]
    if unknown:
        raise ValueError(
            f"Unknown benchmark model(s). Received: {unknown}. Choose from {sorted(MODELS)}."
        )
    return list(names)


def default_input(name: str, quick: bool) -> InputSpec:
    """The synthetic-data input of model `name` (smaller when `quick`)."""
    info = MODELS[name]
    shape = info.quick_input if quick else info.full_input
    classes = 10 if quick else info.full_classes
    return InputSpec(info.kind, tuple(shape), classes)


def build(
    name: str,
    input_spec: InputSpec,
    branch_devices: Sequence[str] | None = None,
    batch_per_replica: int | None = None,
):
    """Builds model `name` for `input_spec`.

    Args:
        name: A key of `MODELS`.
        input_spec: The input the model takes.
        branch_devices: For a model with branches, the device of each branch
            (cycled), applied with `parallel_keras.device` as the legacy tutorials apply
            `tf.device`. Defaults to None (no placement).
        batch_per_replica: The fixed batch a stateful model is built for
            (rows per replica). Defaults to None.

    Returns:
        An uncompiled `keras.Model` with softmax outputs over the classes.

    Raises:
        ValueError: If `branch_devices` is given for a model without branches.
    """
    import keras

    classes = input_spec.num_classes
    shape = input_spec.shape
    if branch_devices and MODELS[name].branches < 2:
        raise ValueError(
            "Device parallelism places independent branches on devices, and "
            f"this model has one branch. Received: model={name!r}. Use a "
            "branched model such as 'two_branch_lstm'."
        )
    if name == "mlp":
        return keras.Sequential(
            [
                keras.Input(shape),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(classes, activation="softmax"),
            ],
            name="mlp",
        )
    if name == "cnn":
        return keras.Sequential(
            [
                keras.Input(shape),
                keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
                keras.layers.Conv2D(32, 3, activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
                keras.layers.Conv2D(64, 3, activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Flatten(),
                keras.layers.Dense(128, activation="relu"),
                keras.layers.Dense(classes, activation="softmax"),
            ],
            name="cnn",
        )
    if name == "resnet50":
        return keras.applications.ResNet50(weights=None, input_shape=shape, classes=classes)
    if name == "xception":
        return keras.applications.Xception(weights=None, input_shape=shape, classes=classes)
    if name == "two_branch_lstm":
        return _two_branch_lstm(shape, classes, branch_devices)
    if name == "multi_output":
        inputs = keras.Input(shape)
        trunk = keras.layers.Dense(512, activation="relu")(inputs)
        trunk = keras.layers.Dense(256, activation="relu")(trunk)
        heads = [
            keras.layers.Dense(classes, activation="softmax", name=f"head_{index}")(trunk)
            for index in range(MODELS[name].outputs)
        ]
        return keras.Model(inputs, heads, name="multi_output")
    if name == "stateful_lstm":
        if batch_per_replica is None:
            raise ValueError(
                "A stateful model is built for a fixed batch per replica. "
                "Received: batch_per_replica=None. Pass the global batch "
                "divided by the replica count."
            )
        inputs = keras.Input(batch_shape=(batch_per_replica,) + tuple(shape))
        x = keras.layers.LSTM(64, stateful=True)(inputs)
        outputs = keras.layers.Dense(classes, activation="softmax")(x)
        return keras.Model(inputs, outputs, name="stateful_lstm")
    raise ValueError(
        f"Unknown benchmark model. Received: name={name!r}. Choose from {sorted(MODELS)}."
    )


def _two_branch_lstm(shape, classes, branch_devices):
    """The legacy tutorials' model: one LSTM shared by two branches, merged on the CPU."""
    import contextlib

    import keras

    input_a = keras.Input(shape, name="sequence_a")
    input_b = keras.Input(shape, name="sequence_b")
    shared_lstm = keras.layers.LSTM(64, name="shared_lstm")
    if branch_devices:
        import parallel_keras

        scope_a = parallel_keras.device(branch_devices[0])
        scope_b = parallel_keras.device(branch_devices[1 % len(branch_devices)])
        scope_merge = parallel_keras.device("/cpu:0")
    else:
        scope_a = scope_b = scope_merge = contextlib.nullcontext()
    with scope_a:
        encoded_a = shared_lstm(input_a)
    with scope_b:
        encoded_b = shared_lstm(input_b)
    with scope_merge:
        merged = keras.layers.concatenate([encoded_a, encoded_b], axis=-1)
    outputs = keras.layers.Dense(classes, activation="softmax")(merged)
    return keras.Model([input_a, input_b], outputs, name="two_branch_lstm")
