# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `keras.preprocessing`, from the `tf_keras` package, fed to Keras 3's `fit`.

Keras 3 dropped `ImageDataGenerator`, `Tokenizer`, `TimeseriesGenerator`,
`skipgrams` and most of `keras.preprocessing`. The `tf_keras` package
(`pip install parallel-keras[keras2]`, the same version line as TensorFlow)
keeps Keras 2's code for them, so augmentation draws, vocabularies and
windows are Keras 2's own (a saved `Tokenizer` still matches).

Its iterators and `TimeseriesGenerator` are `tf_keras.utils.Sequence`s,
which Keras 3's `fit` does not take; the ones made here are also
`keras.utils.PyDataset`s, and give batches as tuples (Keras 3 rejects
list-structured batches). Everything else is `tf_keras`'s own object.

Names load on first use, so `tf_keras` is imported only by scripts that use
them.
"""

from __future__ import annotations

import importlib
from typing import Any

import keras

# name -> tf_keras module that defines it.
_FROM_TF_KERAS = {
    **dict.fromkeys(
        (
            "Tokenizer",
            "hashing_trick",
            "one_hot",
            "text_to_word_sequence",
            "tokenizer_from_json",
        ),
        "tf_keras.preprocessing.text",
    ),
    **dict.fromkeys(("make_sampling_table", "skipgrams"), "tf_keras.preprocessing.sequence"),
    **dict.fromkeys(
        (
            "apply_affine_transform",
            "apply_brightness_shift",
            "apply_channel_shift",
            "random_brightness",
            "random_channel_shift",
            "random_rotation",
            "random_shear",
            "random_shift",
            "random_zoom",
        ),
        "tf_keras.preprocessing.image",
    ),
    # Keras 2's enqueuers: threads or processes that run a generator (or a
    # Sequence's batches) ahead of the training loop, pure Python.
    **dict.fromkeys(("OrderedEnqueuer", "SequenceEnqueuer"), "tf_keras.utils"),
}
# Sequences Keras 3's fit must take: made PyDatasets as well.
_SEQUENCES = {
    "TimeseriesGenerator": "tf_keras.preprocessing.sequence",
    "Iterator": "tf_keras.preprocessing.image",
    "NumpyArrayIterator": "tf_keras.preprocessing.image",
    "DirectoryIterator": "tf_keras.preprocessing.image",
}
NAMES = frozenset({*_FROM_TF_KERAS, *_SEQUENCES, "ImageDataGenerator", "GeneratorEnqueuer"})
_built: dict[str, Any] = {}
_adapted: dict[type, type] = {}


def _tf_keras(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            "Keras 2's preprocessing (ImageDataGenerator, Tokenizer, "
            "TimeseriesGenerator, ...) comes from the tf_keras package, which is "
            f"not installed. Received: import {module} failed ({error}). Run: "
            "pip install 'parallel-keras[keras2]' (tf_keras of your TensorFlow's "
            "version)."
        ) from error


def _as_tuples(batch: Any) -> Any:
    if isinstance(batch, (list, tuple)):
        return tuple(_as_tuples(item) if isinstance(item, list) else item for item in batch)
    return batch


def adapted_class(sequence_class: Any) -> Any:
    """`sequence_class` (a `tf_keras.utils.Sequence`) that is also a Keras 3 `PyDataset`."""
    if sequence_class in _adapted:
        return _adapted[sequence_class]
    if issubclass(sequence_class, keras.utils.PyDataset):
        return sequence_class

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        sequence_class.__init__(self, *args, **kwargs)
        keras.utils.PyDataset.__init__(self)

    def __getitem__(self: Any, index: int) -> Any:
        return _as_tuples(sequence_class.__getitem__(self, index))

    def next_batch(self: Any) -> Any:
        return _as_tuples(sequence_class.next(self))

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "__getitem__": __getitem__,
        "__module__": __name__,
        "__doc__": sequence_class.__doc__,
    }
    if hasattr(sequence_class, "next"):  # tf_keras iterators: `next(it)` and `it.next()`.
        namespace["__next__"] = next_batch
        namespace["next"] = next_batch
    # Keras 3 reads the length through `num_batches`; the Sequence's own
    # `__len__`, `on_epoch_end` and `__iter__` come first in the order.
    subclass = type(sequence_class.__name__, (sequence_class, keras.utils.PyDataset), namespace)
    _adapted[sequence_class] = subclass
    return subclass


def adapt_sequence(sequence: Any) -> Any:
    """Makes a `tf_keras.utils.Sequence` instance a Keras 3 `PyDataset` too, in place.

    Args:
        sequence: An iterator a `tf_keras` `ImageDataGenerator` returned, a
            `TimeseriesGenerator`, or any `tf_keras.utils.Sequence`.

    Returns:
        The same object, now also a `keras.utils.PyDataset`.
    """
    if isinstance(sequence, keras.utils.PyDataset):
        return sequence
    sequence.__class__ = adapted_class(type(sequence))
    keras.utils.PyDataset.__init__(sequence)
    return sequence


def _image_data_generator() -> type:
    base = _tf_keras("tf_keras.preprocessing.image").ImageDataGenerator

    class ImageDataGenerator(base):  # type: ignore[misc, valid-type]
        """Keras 2's `ImageDataGenerator` (from `tf_keras`), its iterators fed to Keras 3.

        The same augmentation as Keras 2; `flow`, `flow_from_directory` and
        `flow_from_dataframe` return iterators that Keras 3's `fit`,
        `evaluate` and `predict` (and a `multi_gpu_model`'s) take. The
        default `data_format` is Keras 3's `image_data_format()`, which a
        Keras 2 script set with `K.set_image_data_format`. Modernise: read
        with `keras.utils.image_dataset_from_directory` or
        `tf.data.Dataset.from_tensor_slices` and augment with preprocessing
        layers (`keras.layers.RandomFlip`, `RandomRotation`, ...).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if len(args) < 20 and "data_format" not in kwargs:
                kwargs["data_format"] = keras.backend.image_data_format()
            super().__init__(*args, **kwargs)

        def flow(self, *args: Any, **kwargs: Any) -> Any:
            return adapt_sequence(super().flow(*args, **kwargs))

        def flow_from_directory(self, *args: Any, **kwargs: Any) -> Any:
            return adapt_sequence(super().flow_from_directory(*args, **kwargs))

        def flow_from_dataframe(self, *args: Any, **kwargs: Any) -> Any:
            return adapt_sequence(super().flow_from_dataframe(*args, **kwargs))

    ImageDataGenerator.__module__ = __name__
    return ImageDataGenerator


def _generator_enqueuer() -> type:
    base = _tf_keras("tf_keras.utils").GeneratorEnqueuer

    class GeneratorEnqueuer(base):  # type: ignore[misc, valid-type]
        """Keras 2's `GeneratorEnqueuer` (from `tf_keras`), with Keras 2.2's arguments.

        Keras 2.2 also took `wait_time` (how long its threads slept while the
        queue was full: no effect on the batches) and `seed` (tf_keras's
        `random_seed`). Modernise: give `fit` a `keras.utils.PyDataset`
        with `workers=` and `use_multiprocessing=`.
        """

        def __init__(
            self,
            generator: Any,
            use_multiprocessing: bool = False,
            wait_time: float | None = None,
            seed: Any = None,
            random_seed: Any = None,
        ) -> None:
            del wait_time  # Only the polling interval of Keras 2.2's threads.
            super().__init__(
                generator,
                use_multiprocessing=use_multiprocessing,
                random_seed=seed if random_seed is None else random_seed,
            )

    GeneratorEnqueuer.__module__ = __name__
    return GeneratorEnqueuer


def __getattr__(name: str) -> Any:
    if name in _built:
        return _built[name]
    if name in _FROM_TF_KERAS:
        value = getattr(_tf_keras(_FROM_TF_KERAS[name]), name)
    elif name in _SEQUENCES:
        value = adapted_class(getattr(_tf_keras(_SEQUENCES[name]), name))
    elif name == "ImageDataGenerator":
        value = _image_data_generator()
    elif name == "GeneratorEnqueuer":
        value = _generator_enqueuer()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _built[name] = value
    return value
