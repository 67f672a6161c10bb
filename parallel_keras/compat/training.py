# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `*_generator` training methods, for calls Keras 3 cannot take as written.

`parallel-keras migrate` rewrites `model.fit_generator(gen, 10, 2)` into
`model.fit(gen, steps_per_epoch=10, epochs=2)` when it can see every
argument. A call that forwards star arguments (a project's wrapper:
`def fit_generator(self, generator, *args, **kwargs): return
self.model.fit_generator(generator, *args, **kwargs)`) cannot be rewritten
that way: its positional arguments follow Keras 2's order, whose second
parameter is `steps_per_epoch`, while `fit`'s is `y`. These functions bind
the arguments to Keras 2's signature when the call runs and call Keras 3's
`fit`/`evaluate`/`predict` by keyword.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any

from absl import logging

from parallel_keras import _keras2_signatures
from parallel_keras.data_parallel import list_batches as list_batches_lib
from parallel_keras.data_parallel import named_data

# Keras 2's signatures after the generator: the order positional arguments
# are read in (shared with migrate's rule).
_SIGNATURES = {method: names[1:] for method, names in _keras2_signatures.GENERATOR_METHODS.items()}
# Keras 2's defaults where Keras 3's differ: evaluate_generator and
# predict_generator printed no progress bar.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "fit_generator": {},
    "evaluate_generator": {"verbose": 0},
    "predict_generator": {"verbose": 0},
}
# Loader options that Keras 3 moved to keras.utils.PyDataset's constructor.
_LOADER_OPTIONS = ("max_queue_size", "workers", "use_multiprocessing")
_STEPS = ("steps_per_epoch", "validation_steps", "steps")


def _keyword_arguments(method: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Binds `args`/`kwargs` to Keras 2's `method` and converts them for Keras 3."""
    names = _SIGNATURES[method]
    if len(args) > len(names):
        raise TypeError(
            f"Keras 2's `{method}` takes at most {len(names) + 1} positional arguments "
            f"(generator, {', '.join(names)}). Received: {len(args) + 1}. Pass the "
            "extra arguments by keyword or remove them."
        )
    bound = dict(_DEFAULTS[method])
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(
                f"`{method}` got `{name}` both by position and by keyword. Received: "
                f"{name}={value!r} and {name}={kwargs[name]!r}. Pass it once."
            )
        bound[name] = value
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise TypeError(
            f"Keras 2's `{method}` has no argument {', '.join(map(repr, unknown))}. "
            f"Received: {', '.join(f'{name}={kwargs[name]!r}' for name in unknown)}. "
            f"Its arguments are: generator, {', '.join(names)}."
        )
    bound.update(kwargs)
    dropped = {name: bound.pop(name) for name in _LOADER_OPTIONS if name in bound}
    if (dropped.get("workers") or 1) > 1 or dropped.get("use_multiprocessing"):
        logging.warning(
            "%s: workers=/use_multiprocessing= are arguments of keras.utils.PyDataset's "
            "constructor in Keras 3; the generator is read by one worker. Received: %s.",
            method,
            dropped,
        )
    for name in _STEPS:
        # Keras 2 accepted a float number of steps (`len(x) / batch_size`)
        # and ran its last, partial step; Keras 3 wants an int.
        if isinstance(bound.get(name), float):
            bound[name] = math.ceil(bound[name])
    if isinstance(bound.get("class_weight"), str):
        # Keras 2 weighted nothing for a class_weight that was not a dict.
        del bound["class_weight"]
    return bound


def _tuples(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _keras3_batch(batch: Any) -> Any:
    """`[x1, x2], y` -> `(x1, x2), y`: Keras 2 read a list as a model's inputs
    (or outputs); Keras 3's `fit` refuses a list in a generator's batch
    (tensorflow/tensorflow#75329) and takes the same tuple."""
    if isinstance(batch, tuple):
        return tuple(_tuples(part) for part in batch)
    return _tuples(batch)


def _batches(model: Any, data: Any) -> Any:
    """A Python generator's batches as Keras 3 takes them (dicts read by the
    model's names, lists as tuples); other data read by name."""
    data = named_batches(model, data)
    if inspect.isgenerator(data):
        return (_keras3_batch(batch) for batch in data)
    return data


def named_batches(model: Any, data: Any) -> Any:
    """Keras 2's reading of dict data by the model's input and output names.

    Keras 2 fed a functional model's inputs from a dict by name, each output
    given a loss likewise, and ignored keys no input or output has (Keras
    2's `image_ocr` example yields a `source_str` of strings beside its
    inputs); Keras 3 converts every key and fails on strings. The data comes
    back the same kind, its dicts replaced by the model's inputs (outputs)
    in order: a generator, `keras.utils.Sequence`/`PyDataset` or
    `tf.data.Dataset` batch by batch, a dict of inputs as the inputs, an
    `(x, y)` or `(x, y, sample_weight)` tuple as such a tuple. Dropped keys
    are logged once. A parallel model reads its data this way itself.

    To modernise: yield (or pass) only the model's inputs and targets, as
    tuples or dicts with exactly their names.

    Args:
        model: The Keras model that reads the data (a parallel model too).
        data: The data passed to `fit`/`evaluate`/`predict` or their
            `validation_data`.

    Returns:
        The data with its dicts read by name.

    Raises:
        ValueError: If a dict of inputs lacks one of the model's inputs.

    Example:

    >>> import keras, numpy as np
    >>> from parallel_keras import compat
    >>> inputs = keras.Input((2,), name="image")
    >>> model = keras.Model(inputs, keras.layers.Dense(1, name="score")(inputs))
    >>> x, y = compat.named_batches(
    ...     model, ({"image": np.ones((4, 2)), "text": np.array(["a"] * 4)},
    ...             {"score": np.zeros((4, 1))}))
    >>> x.shape, y.shape
    ((4, 2), (4, 1))
    """
    if isinstance(data, tuple) and any(isinstance(part, Mapping) for part in data):
        return named_data.batch_by_name(model, data)
    if isinstance(data, Mapping):
        return named_data.by_name(model, data)[0]
    return named_data.batches(model, data)


def list_batches(data: Any, inputs_only: bool = False) -> Any:
    """Keras 2's reading of batches that hold lists: `[x1, x2], y` and `x, [y1, y2]`.

    A Keras 2 generator or `keras.utils.Sequence` for a model with several
    inputs or outputs yields them as lists; Keras 3's `fit`, `evaluate` and
    `predict` refuse a list inside a batch (`TypeError: output_signature must
    contain objects that are subclass of tf.TypeSpec but found <class
    'list'>`). Every list in a batch becomes a tuple, which Keras 3 reads as
    the same inputs (outputs) in the same order, batch by batch as the model
    reads them; other batches pass unchanged. A generator comes back a
    generator, a `Sequence`/`PyDataset` a `PyDataset` of the same length,
    loader options and epoch hooks, anything else as it is. A parallel model
    (`multi_gpu_model`) reads its data this way itself.

    To modernise: yield tuples (`(x1, x2), y`).

    Args:
        data: The data given to `fit` (or its `validation_data`), `evaluate`
            or `predict`.
        inputs_only: The data of `predict`: a batch that is not a tuple is
            the inputs, as Keras 2's `predict_generator` read it (`[x1,
            x2]`: both inputs; Keras 3 would read it as `(x, y)`). Defaults
            to False.

    Returns:
        The data with the lists of its batches as tuples.

    Example:

    >>> import numpy as np
    >>> from parallel_keras import compat
    >>> keras2_batches = (([np.ones(2), np.zeros(2)], [np.ones(1)]) for _ in range(3))
    >>> batch = next(compat.list_batches(keras2_batches))
    >>> [type(part).__name__ for part in batch]
    ['tuple', 'tuple']
    """
    return list_batches_lib.keras2_batches(data, inputs_only=inputs_only)


def fit_generator(model: Any, generator: Any, *args: Any, **kwargs: Any) -> Any:
    """Keras 2's `model.fit_generator(generator, ...)`, run by Keras 3's `fit`.

    Positional arguments after the generator follow Keras 2's order:
    steps_per_epoch, epochs, verbose, callbacks, validation_data,
    validation_steps, validation_freq, class_weight, max_queue_size, workers,
    use_multiprocessing, shuffle, initial_epoch. Dict batches are read by
    the model's input and output names (`named_batches`). A Python generator's
    `[x1, x2], y` batches (a list of inputs, which Keras 3 refuses) are
    passed on as `(x1, x2), y`. `max_queue_size`, `workers`
    and `use_multiprocessing` are dropped (Keras 3 reads them from a
    `keras.utils.PyDataset`'s constructor; a warning is logged when they
    asked for parallel loading), a float number of steps is rounded up (Keras
    2 ran the partial last step), and a `class_weight` that is not a dict is
    dropped (Keras 2 weighted nothing for it).

    To modernise: call `model.fit(generator, steps_per_epoch=..., ...)` with
    every argument by keyword.

    Args:
        model: A Keras 3 model (or anything with Keras 3's `fit`).
        generator: The data: a Python generator, a `keras.utils.Sequence` /
            `PyDataset`, or a `tf.data.Dataset`.
        *args: Keras 2's positional arguments after the generator.
        **kwargs: Keras 2's keyword arguments.

    Returns:
        The `History` that `model.fit` returns.

    Raises:
        TypeError: If an argument is not one of Keras 2's `fit_generator`, or
            is given both by position and by keyword.
    """
    options = _keyword_arguments("fit_generator", args, kwargs)
    generator = _batches(model, generator)
    if "validation_data" in options:
        options["validation_data"] = _batches(model, options["validation_data"])
    return model.fit(generator, **options)


def evaluate_generator(model: Any, generator: Any, *args: Any, **kwargs: Any) -> Any:
    """Keras 2's `model.evaluate_generator(generator, ...)`, run by Keras 3's `evaluate`.

    Positional arguments after the generator follow Keras 2's order: steps,
    callbacks, max_queue_size, workers, use_multiprocessing, verbose (0 by
    default, as in Keras 2). The loader options are dropped as in
    `fit_generator`.

    To modernise: call `model.evaluate(generator, steps=..., verbose=0)`.

    Args:
        model: A Keras 3 model.
        generator: The data (a generator, `Sequence`/`PyDataset` or dataset).
        *args: Keras 2's positional arguments after the generator.
        **kwargs: Keras 2's keyword arguments.

    Returns:
        What `model.evaluate` returns: the loss, or the loss and metrics.

    Raises:
        TypeError: If an argument is not one of Keras 2's `evaluate_generator`.
    """
    options = _keyword_arguments("evaluate_generator", args, kwargs)
    generator = _batches(model, generator)
    return model.evaluate(generator, **options)


def predict_generator(model: Any, generator: Any, *args: Any, **kwargs: Any) -> Any:
    """Keras 2's `model.predict_generator(generator, ...)`, run by Keras 3's `predict`.

    Positional arguments after the generator follow Keras 2's order: steps,
    callbacks, max_queue_size, workers, use_multiprocessing, verbose (0 by
    default, as in Keras 2). The loader options are dropped as in
    `fit_generator`.

    To modernise: call `model.predict(generator, steps=..., verbose=0)`.

    Args:
        model: A Keras 3 model.
        generator: The data (a generator, `Sequence`/`PyDataset` or dataset).
        *args: Keras 2's positional arguments after the generator.
        **kwargs: Keras 2's keyword arguments.

    Returns:
        The predictions `model.predict` returns.

    Raises:
        TypeError: If an argument is not one of Keras 2's `predict_generator`.
    """
    options = _keyword_arguments("predict_generator", args, kwargs)
    generator = named_batches(model, generator)
    if inspect.isgenerator(generator):
        # Keras 2 took bare input batches; Keras 3 reads a tuple's first item.
        generator = (_keras3_batch(b) if isinstance(b, tuple) else (_tuples(b),) for b in generator)
    return model.predict(generator, **options)


def target_tensors(tensors: Any) -> dict[str, Any]:
    """Keras 2's `compile(target_tensors=...)` where the value is decided at run time.

    `model.compile(..., target_tensors=None if not use_dataset_api else [targets])`:
    Keras 2's `None` meant no target tensors, the targets then coming from
    `fit`'s data, which is Keras 3's only way; migrate writes
    `**parallel_keras.compat.target_tensors(<the value>)` into the call.
    Modernise: delete the argument and pass the targets to `fit` as `y`.

    Args:
        tensors: The value the script gave `target_tensors=`.

    Returns:
        `{}` (no argument) when `tensors` is None.

    Raises:
        ValueError: If `tensors` holds tensors: Keras 3's compile has no
            target tensors, so nothing can feed them.

    Example:

    >>> from parallel_keras import compat
    >>> compat.target_tensors(None)
    {}
    """
    if tensors is None:
        return {}
    raise ValueError(
        "Keras 3's compile has no target_tensors: the targets come from fit's data. "
        f"Received: target_tensors={tensors!r}. Remove the argument and pass those targets "
        "to fit as y (a NumPy array, a tf.data.Dataset or a generator yielding (x, y))."
    )
