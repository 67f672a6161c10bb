# SPDX-License-Identifier: Apache-2.0
"""Input pipelines: synthetic batches, or a TFDS dataset already on disk.

`synthetic` (the default) repeats one random batch, so the step time measures
the model and the parallelism, not the input pipeline (TensorFlow's published
multi-GPU figures use synthetic data for the same reason). `tfds:NAME` reads
an image-classification dataset prepared earlier in `--data-dir`; it never
downloads, because a benchmark that starts a multi-gigabyte download is not
what anyone asked for.
"""

from __future__ import annotations

import dataclasses

from benchmarks.suite import models

SYNTHETIC = "synthetic"
_TFDS_PREFIX = "tfds:"


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Where the batches come from.

    Attributes:
        source: `"synthetic"` or `"tfds"`.
        name: The TFDS dataset name (`"mnist"`, `"cifar10:3.0.2"`), or None.
        split: The TFDS split to read. Defaults to "train".
    """

    source: str
    name: str | None = None
    split: str = "train"

    def __str__(self) -> str:
        return SYNTHETIC if self.source == SYNTHETIC else f"tfds:{self.name}"


def parse(value: str) -> DatasetSpec:
    """Parses the `--dataset` flag: `synthetic` or `tfds:NAME`.

    Raises:
        ValueError: If the value is neither.
    """
    if value == SYNTHETIC:
        return DatasetSpec(SYNTHETIC)
    if value.startswith(_TFDS_PREFIX) and value[len(_TFDS_PREFIX) :]:
        return DatasetSpec("tfds", value[len(_TFDS_PREFIX) :])
    raise ValueError(
        "--dataset must be 'synthetic' or 'tfds:NAME' (a TensorFlow Datasets "
        f"name). Received: --dataset={value!r}. Example: --dataset=tfds:mnist."
    )


def load_tfds(spec: DatasetSpec, data_dir: str | None):
    """Opens a prepared TFDS dataset without downloading anything.

    Args:
        spec: A `tfds` dataset spec.
        data_dir: The TFDS data directory. Defaults to TFDS's own default
            (`~/tensorflow_datasets`) when None.

    Returns:
        `(dataset, info)`: `(image, label)` pairs and the `tfds.core.DatasetInfo`.

    Raises:
        ValueError: If the dataset is unknown, not prepared in `data_dir`,
            or not an image-classification dataset.
    """
    import tensorflow_datasets as tfds

    where = data_dir or "the default TFDS data_dir (~/tensorflow_datasets)"
    try:
        dataset, info = tfds.load(
            spec.name,
            split=spec.split,
            data_dir=data_dir,
            download=False,
            as_supervised=True,
            with_info=True,
        )
    except tfds.core.registered.DatasetNotFoundError as error:
        raise ValueError(
            "--dataset=tfds:NAME must name a TensorFlow Datasets dataset. "
            f"Received: --dataset=tfds:{spec.name}. See "
            "https://www.tensorflow.org/datasets/catalog for the names."
        ) from error
    except AssertionError as error:
        # tfds.load(download=False) asserts when the files are not there.
        raise ValueError(
            "The benchmark reads TFDS datasets from disk and never downloads "
            f"them. Received: --dataset=tfds:{spec.name} with "
            f"--data-dir={data_dir}, and no prepared data was found in "
            f'{where}. Prepare it first (python -c "import tensorflow_datasets '
            f"as tfds; tfds.builder('{spec.name}', data_dir='DIR')"
            '.download_and_prepare()") and pass --data-dir=DIR, or use '
            "--dataset=synthetic."
        ) from error
    features = info.features
    keys = info.supervised_keys
    image = features[keys[0]] if keys else None
    shape = getattr(image, "shape", None)
    if not keys or shape is None or len(shape) != 3 or None in shape:
        raise ValueError(
            "The benchmark trains image classifiers, so a TFDS dataset must "
            "have fixed-size (image, label) supervised keys. Received: "
            f"--dataset=tfds:{spec.name} with supervised_keys={keys}. Use "
            "e.g. tfds:mnist or tfds:cifar10."
        )
    return dataset, info


def check_available(spec: DatasetSpec, data_dir: str | None) -> None:
    """Fails fast, before any run starts, when a TFDS dataset is missing."""
    if spec.source != SYNTHETIC:
        load_tfds(spec, data_dir)


def input_spec_for(
    model_name: str, spec: DatasetSpec, data_dir: str | None, quick: bool
) -> models.InputSpec:
    """The input model `model_name` takes for this dataset."""
    if spec.source == SYNTHETIC:
        return models.default_input(model_name, quick)
    _, info = load_tfds(spec, data_dir)
    keys = info.supervised_keys
    height, width, channels = info.features[keys[0]].shape
    classes = info.features[keys[1]].num_classes
    return _adapted_spec(model_name, (height, width, channels), classes)


def _adapted_spec(model_name, image_shape, classes) -> models.InputSpec:
    info = models.MODELS[model_name]
    height, width, channels = image_shape
    if info.kind == models.VECTOR:
        return models.InputSpec(models.VECTOR, (height * width * channels,), classes)
    if info.kind == models.TWO_SEQUENCES:
        # Rows of the image are the time steps; both branches read the image.
        return models.InputSpec(models.TWO_SEQUENCES, (height, width * channels), classes)
    side = info.min_image_side
    # keras.applications networks need 3 channels and a minimum side.
    return models.InputSpec(
        models.IMAGE,
        (max(height, side), max(width, side), 3 if side > 1 else channels),
        classes,
    )


def make_dataset(
    model_name: str,
    spec: DatasetSpec,
    input_spec: models.InputSpec,
    global_batch_size: int,
    data_dir: str | None = None,
    seed: int = 0,
):
    """An endless `tf.data.Dataset` of `(inputs, labels)` global batches.

    Args:
        model_name: The model the batches feed.
        spec: Where the data comes from.
        input_spec: The model's input, from `input_spec_for`.
        global_batch_size: Rows per batch, across all replicas.
        data_dir: The TFDS data directory. Defaults to None.
        seed: Seed of the synthetic batch. Defaults to 0.

    Returns:
        A repeated, prefetched `tf.data.Dataset`.
    """
    import numpy as np
    import tensorflow as tf

    if spec.source == SYNTHETIC:
        rng = np.random.default_rng(seed)
        shape = (global_batch_size,) + input_spec.shape
        labels = rng.integers(0, input_spec.num_classes, size=(global_batch_size,))
        if input_spec.kind == models.TWO_SEQUENCES:
            inputs = tuple(rng.random(shape, dtype=np.float32) for _ in range(2))
        else:
            inputs = rng.random(shape, dtype=np.float32)
        outputs = models.MODELS[model_name].outputs
        if outputs > 1:
            labels = (labels,) * outputs
        return tf.data.Dataset.from_tensors((inputs, labels)).repeat()

    dataset, _ = load_tfds(spec, data_dir)

    def adapt(image, label):
        image = tf.cast(image, tf.float32) / 255.0
        if models.MODELS[model_name].outputs > 1:
            label = (label,) * models.MODELS[model_name].outputs
        if input_spec.kind in (models.VECTOR, models.SEQUENCE):
            return tf.reshape(image, input_spec.shape), label
        if input_spec.kind == models.TWO_SEQUENCES:
            sequence = tf.reshape(image, input_spec.shape)
            return (sequence, sequence), label
        height, width, channels = input_spec.shape
        if image.shape[-1] != channels:
            image = tf.image.grayscale_to_rgb(image)
        if tuple(image.shape[:2]) != (height, width):
            image = tf.image.resize(image, (height, width))
        return image, label

    return (
        dataset.map(adapt, num_parallel_calls=tf.data.AUTOTUNE)
        .repeat()
        .batch(global_batch_size, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
