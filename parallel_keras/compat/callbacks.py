# SPDX-License-Identifier: Apache-2.0
"""Keras 2's callback `params`, for callbacks written against Keras 2's `fit`.

Keras 2's `fit` told its callbacks (`self.params`) `batch_size`, `epochs`,
`steps`, `samples`, `verbose`, `do_validation` and `metrics`, the names of
the values in the logs (keras/engine/training_arrays.py `fit_loop`, Keras
2.2.4 and 2.3.1; `fit_generator` gave `epochs`, `steps`, `verbose`,
`do_validation`, `metrics`), and its batch logs held `batch` and `size`.
Keras 3 gives `verbose`, `epochs` and `steps` only, so Keras 2-era callbacks
(keras_tqdm's `TQDMCallback`, a project's own progress or logging callback)
stop at `self.params['metrics']` with a KeyError.

`Keras2Callback` is Keras 3's `Callback` that gives `self.params` Keras 2's
keys, from the `fit` call it runs in; `keras2_callback(callback)` makes an
instance of another callback class (from a library) read them too.

Differences from Keras 2, all about `params['metrics']`: it lists Keras 3's
names of the logs (`accuracy` where Keras 2.2 wrote `acc`; the loss, then
each metric), in Keras 3's order, and is empty until the first batch has
trained (Keras 3 builds its metrics on that batch; Keras 2 knew them before
`on_train_begin`).

Modernise: read what the callback needs from `logs` (its keys are the
metrics) and `self.params['steps']`, then derive from
`keras.callbacks.Callback` again.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

from parallel_keras._internals import fit_arguments
from parallel_keras.compat.summaries import FileWriter

# Keras 2's fit_loop: batch_size=None and steps_per_epoch=None meant 32.
_KERAS2_DEFAULT_BATCH_SIZE = 32


def _samples(x: Any) -> int | None:
    """How many samples `x` holds when it is arrays (Keras 2's `samples`), else None."""
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    elif isinstance(x, (list, tuple)):
        x = x[0] if x else None
    shape = getattr(x, "shape", None)
    if shape is None or not len(shape) or shape[0] is None:
        return None  # a generator, a PyDataset, a tf.data.Dataset: Keras 2's fit_generator
    return int(shape[0])


def _metric_names(model: Any, validation: bool) -> list[str]:
    try:
        names = list(model.get_metrics_result())
    except (ValueError, AttributeError):  # metrics not built before the first batch
        return []
    return names + [f"val_{name}" for name in names] if validation else names


class _Keras2Params(dict):
    """A callback's params with Keras 2's keys; `metrics` is read once the metrics exist."""

    def __init__(self, params: dict, model: Any, validation: bool):
        super().__init__(params)
        self._fit_model = model
        self._validation = validation

    def _fill_metrics(self) -> None:
        if not dict.get(self, "metrics"):
            dict.__setitem__(self, "metrics", _metric_names(self._fit_model, self._validation))

    def __getitem__(self, key: Any) -> Any:
        if key == "metrics":
            self._fill_metrics()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "metrics":
            self._fill_metrics()
        return super().get(key, default)


def keras2_params(params: dict, model: Any) -> dict:
    """Keras 3's callback `params` with the keys Keras 2's `fit` gave.

    Args:
        params: What Keras 3 gave `set_params` (`verbose`, `epochs`, `steps`).
        model: The model the callback runs on.

    Returns:
        A new dict (the other callbacks keep Keras 3's): Keras 2's
        `do_validation` and `metrics`, and for arrays `batch_size`,
        `samples` and `steps` (None unless `steps_per_epoch` was given), as
        Keras 2's `fit_loop`; for a generator or dataset, Keras 2's
        `fit_generator` keys. Outside `fit`, Keras 3's keys and `metrics`.
    """
    arguments = fit_arguments.fit_arguments(model)
    if arguments is None:
        return _Keras2Params(params, model, validation=False)
    validation = arguments["validation_data"] is not None
    keras2 = dict(params, do_validation=validation, metrics=[])
    samples = _samples(arguments["x"])
    if samples is not None:
        steps = arguments["steps_per_epoch"]
        batch_size = arguments["batch_size"]
        if batch_size is None and steps is None:
            batch_size = _KERAS2_DEFAULT_BATCH_SIZE
        keras2.update(batch_size=batch_size, steps=steps, samples=None if steps else samples)
    return _Keras2Params(keras2, model, validation)


class Keras2Callback(keras.callbacks.Callback):
    """Keras 3's `Callback` whose `self.params` and batch logs are Keras 2's.

    `self.params` holds `batch_size`, `epochs`, `steps`, `samples`,
    `verbose`, `do_validation` and `metrics` as Keras 2's `fit` gave them
    (see the module docstring for the differences in `metrics`). Log values
    are NumPy float32 scalars, as Keras 2's were (Keras 3 gives Python
    floats); when `samples` is known, batch logs also hold Keras 2's `batch`
    and `size`.

    Example:
        >>> class Progress(Keras2Callback):  # was keras.callbacks.Callback
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         print([logs[name] for name in self.params["metrics"]])
    """

    def set_params(self, params: dict) -> None:
        super().set_params(keras2_params(params, self.model) if params else params)

    def _keras2_logs(self, logs: dict | None, batch: int | None = None) -> dict | None:
        """Keras 2's logs: NumPy float32 values (Keras 3 gives Python floats); for
        arrays, batch logs also hold `batch` and `size`."""
        if logs is None:
            return logs
        logs = {
            key: np.float32(value) if isinstance(value, float) else value
            for key, value in logs.items()
        }
        params = getattr(self, "params", None) or {}
        samples, batch_size = params.get("samples"), params.get("batch_size")
        if batch is not None and samples and batch_size:
            logs.setdefault("batch", batch)
            logs.setdefault("size", max(0, min(batch_size, samples - batch * batch_size)))
        return logs

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        super().on_train_batch_begin(batch, self._keras2_logs(logs or {}, batch))

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        super().on_train_batch_end(batch, self._keras2_logs(logs, batch))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        super().on_epoch_end(epoch, self._keras2_logs(logs))


_CLASSES: dict[type, type] = {}


def keras2_callback(callback: Any) -> Any:
    """Makes a callback from another library read Keras 2's `params`.

    The same object is returned, its class now a subclass of its own class
    and `Keras2Callback` (so `isinstance` checks and its attributes hold).

    Args:
        callback: A `keras.callbacks.Callback` written for Keras 2's `fit`
            (e.g. `keras_tqdm.TQDMCallback()`).

    Returns:
        `callback`.

    Raises:
        TypeError: `callback` is not a Keras 3 callback.

    Example:
        `model.fit(x, y, callbacks=[keras2_callback(keras_tqdm.TQDMCallback())])`
    """
    cls = type(callback)
    if isinstance(callback, Keras2Callback):
        return callback
    if not isinstance(callback, keras.callbacks.Callback):
        raise TypeError(
            "keras2_callback gives Keras 2's params to a keras.callbacks.Callback. "
            f"Received: {cls.__module__}.{cls.__qualname__}. Fix: pass a Keras 3 callback, "
            "or remove the keras2_callback(...) around it."
        )
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (Keras2Callback, cls), {"__module__": cls.__module__})
    callback.__class__ = _CLASSES[cls]
    return callback


class TensorBoard(keras.callbacks.TensorBoard):
    """Keras 3's `TensorBoard` with Keras 2's `writer`, for scripts that log by hand.

    Keras 2's `TensorBoard.set_model` made `self.writer`, a
    `tf.summary.FileWriter` on `log_dir`, and Keras 2 GAN scripts called
    `callback.set_model(model)` to write their own values with
    `callback.writer.add_summary(summary, step)`. Keras 3's callback has no
    `writer`; here `set_model` makes one, `parallel_keras.compat.FileWriter`
    on `log_dir` (the same `Summary` protos in a TF 2 event file).
    Everything else is Keras 3's `TensorBoard`.

    Modernise: `writer = tf.summary.create_file_writer(log_dir)` and
    `with writer.as_default(): tf.summary.scalar(name, value, step=step)`.
    """

    writer: FileWriter | None = None

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        if self.writer is None:
            self.writer = FileWriter(self.log_dir)
