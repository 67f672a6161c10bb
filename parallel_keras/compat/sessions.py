# SPDX-License-Identifier: Apache-2.0
"""Keras 2's TF1 sessions, made harmless: their GPU options go to `tf.config`.

Keras 2 scripts open with

    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    K.set_session(tf.Session(config=config))

and helpers that build, return or store a session. `parallel-keras migrate`
keeps those objects on TensorFlow's own compatibility path
(`tf.compat.v1.ConfigProto`, `tf.compat.v1.Session`) and sends
`K.set_session`/`K.get_session` here: `set_session` applies the session's
GPU options as the process-wide `tf.config` calls TF 2 has, and
`get_session` returns a session whose `run` gives values.

A class that builds TF1 placeholders and runs them with its own session
(box post-processing, a TF1 metric) runs in a graph of its own with
`tf1_graph`.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import tensorflow as tf
from absl import logging

from parallel_keras import _internals

_Class = TypeVar("_Class", bound=type)


def apply_session_config(config: Any) -> list[str]:
    """Applies a TF1 `ConfigProto` or `GPUOptions` as `tf.config` calls.

    `allow_growth` and `per_process_gpu_memory_fraction` become memory growth
    on each GPU (TF 2 caps memory in megabytes per GPU, which a fraction
    does not give; growth also keeps the process from taking the whole GPU),
    `visible_device_list` the visible GPUs, `device_count={'GPU': 0}` no
    GPU, and `allow_soft_placement`, `log_device_placement` and the thread
    counts their `tf.config` calls. An option TensorFlow no longer accepts
    because the GPUs are already in use is logged and skipped, as TF1
    ignored a config given after the first session.

    Args:
        config: A `tf.compat.v1.ConfigProto` or `tf.compat.v1.GPUOptions`.

    Returns:
        The `tf.config` calls made, as text (for logs and tests).

    Example:

    >>> import tensorflow as tf
    >>> from parallel_keras import compat
    >>> config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    >>> compat.apply_session_config(config)
    ['tf.config.set_soft_device_placement(True)']
    """
    is_gpu_options = isinstance(config, tf.compat.v1.GPUOptions)
    gpu_options = config if is_gpu_options else config.gpu_options
    applied: list[str] = []

    def attempt(text: str, call: Callable[[], Any]) -> None:
        try:
            call()
        except (RuntimeError, ValueError) as error:
            logging.warning("Session option not applied (%s): %s", text, error)
            return
        applied.append(text)

    gpus = tf.config.list_physical_devices("GPU")
    if not is_gpu_options and config.device_count.get("GPU", None) == 0:
        attempt(
            "tf.config.set_visible_devices([], 'GPU')",
            lambda: tf.config.set_visible_devices([], "GPU"),
        )
        gpus = []
    if gpu_options.visible_device_list:
        wanted = gpu_options.visible_device_list.replace(" ", "").split(",")
        gpus = [gpu for gpu in gpus if gpu.name.rsplit(":", 1)[-1] in wanted]
        chosen = list(gpus)
        attempt(
            f"tf.config.set_visible_devices(<GPUs {','.join(wanted)}>, 'GPU')",
            lambda: tf.config.set_visible_devices(chosen, "GPU"),
        )
    if gpu_options.allow_growth or gpu_options.per_process_gpu_memory_fraction:
        for gpu in gpus:
            attempt(
                f"tf.config.experimental.set_memory_growth({gpu.name!r}, True)",
                functools.partial(tf.config.experimental.set_memory_growth, gpu, True),
            )
    if not is_gpu_options:
        if config.allow_soft_placement:
            attempt(
                "tf.config.set_soft_device_placement(True)",
                lambda: tf.config.set_soft_device_placement(True),
            )
        if config.log_device_placement:
            attempt(
                "tf.debugging.set_log_device_placement(True)",
                lambda: tf.debugging.set_log_device_placement(True),
            )
        for kind in ("intra_op", "inter_op"):
            threads = getattr(config, f"{kind}_parallelism_threads")
            if threads:
                setter = getattr(tf.config.threading, f"set_{kind}_parallelism_threads")
                attempt(
                    f"tf.config.threading.set_{kind}_parallelism_threads({threads})",
                    functools.partial(setter, threads),
                )
    return applied


def set_session(session: Any) -> None:
    """Keras 2's `K.set_session`: the session's GPU options, as `tf.config` calls.

    Keras 3 has no session; the options a script put in the session's
    config (`allow_growth`, `per_process_gpu_memory_fraction`,
    `visible_device_list`, ...) are applied with `apply_session_config`.
    Modernise: call `tf.config.experimental.set_memory_growth(gpu, True)`
    (and `tf.config.set_visible_devices`) at the top of the script and drop
    the session.

    Args:
        session: A `tf.compat.v1.Session` (or the object `get_session`
            returned: nothing to apply).
    """
    if isinstance(session, EagerSession):
        config = session.config
    else:
        config = _internals.session_config(session)
    if config is not None:
        applied = apply_session_config(config)
        logging.info("set_session: applied %s", ", ".join(applied) or "no option")


class EagerSession:
    """What `get_session` returns outside a TF1 graph: a session over eager values.

    `run` gives the values of eager tensors and variables (Keras 2's
    `K.get_session().run(model.optimizer.lr)`), `None` for the no-op TF 2
    initializers return, so `sess.run(tf.compat.v1.global_variables_initializer())`
    does nothing, as variables are initialized when created.
    """

    graph = None

    def __init__(self, config: Any = None):
        self.config = config

    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """The values of `fetches` (any nest of tensors, variables, None)."""
        if feed_dict:
            raise ValueError(
                "A session outside a TF1 graph runs eager values only, so it "
                "cannot feed placeholders. Received: feed_dict with "
                f"{len(feed_dict)} entries. Build the placeholders in a class "
                "decorated with parallel_keras.compat.tf1_graph, or call the "
                "model on the values directly."
            )
        return tf.nest.map_structure(_value, fetches)

    def list_devices(self) -> list:
        """The logical devices (Keras 2 scripts count GPUs with it)."""
        return tf.config.list_logical_devices()

    def close(self) -> None:
        """Nothing to release."""

    def as_default(self) -> contextlib.AbstractContextManager:
        """A context that changes nothing (there is one eager context)."""
        return contextlib.nullcontext(self)

    def __enter__(self) -> EagerSession:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        return None


def _value(fetch: Any) -> Any:
    if fetch is None or isinstance(fetch, tf.Operation):
        return None
    if hasattr(fetch, "numpy"):
        return fetch.numpy()
    if hasattr(fetch, "value") and callable(fetch.value):  # A Keras variable.
        return _value(fetch.value())
    return fetch


def Session(target: str = "", graph: Any = None, config: Any = None) -> Any:  # noqa: N802
    """Keras 2-era `tf.Session(...)`: a TF1 session in a graph, else an `EagerSession`.

    Inside TF1 graph code (a class decorated with `tf1_graph`, `with
    graph.as_default()`, or given `graph=`) this is `tf.compat.v1.Session`,
    which runs that graph. Elsewhere TF 2 runs eagerly and there is no graph
    to run: the `EagerSession` returned keeps the `config` (for
    `set_session`) and its `run` returns eager values, so `with
    tf.Session(config=config) as sess: K.set_session(sess); sess.run(init)`
    set-up runs. Modernise: delete the session and call `tf.config`.

    Args:
        target: TF1's execution engine address. Defaults to "".
        graph: The graph to run. Defaults to None (the default graph).
        config: A `tf.compat.v1.ConfigProto`. Defaults to None.

    Returns:
        A `tf.compat.v1.Session` or an `EagerSession`.
    """
    if graph is not None or not tf.executing_eagerly():
        return tf.compat.v1.Session(target, graph=graph, config=config)
    return EagerSession(config)


_graph_sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_EAGER_SESSION = EagerSession()


def get_session() -> Any:
    """Keras 2's `K.get_session`: the session of the code around it.

    Inside a TF1 graph (a class decorated with `tf1_graph`, or `with
    graph.as_default()`), a `tf.compat.v1.Session` on that graph, one per
    graph, as Keras 2 kept one. Elsewhere an `EagerSession`, whose `run`
    returns the values of eager tensors and variables. Modernise: read
    values directly (`tensor.numpy()`, `variable.assign(...)`).

    Returns:
        A `tf.compat.v1.Session` or an `EagerSession`.
    """
    if tf.executing_eagerly():
        return _EAGER_SESSION
    graph = tf.compat.v1.get_default_graph()
    if graph not in _graph_sessions:
        _graph_sessions[graph] = tf.compat.v1.Session(graph=graph)
    return _graph_sessions[graph]


def tf1_graph(cls: _Class) -> _Class:
    """Runs a class's TF1 graph code in a `tf.Graph` of its own.

    Keras 2-era helpers build placeholders in `__init__` and run them later
    with their own session (`self.sess.run(self.nms, feed_dict=...)`). TF 2
    runs eagerly, where placeholders do not exist; with this decorator each
    instance gets its own `tf.Graph`, every method runs with that graph as
    the default, and `tf.compat.v1.Session()` or `get_session()` made there
    run it, as they did in TF1. Modernise: write the computation as a
    `tf.function` (or plain eager code) of its inputs.

    Args:
        cls: The class.

    Returns:
        The same class, its methods wrapped.

    Example:

    >>> import numpy as np, tensorflow as tf
    >>> from parallel_keras import compat
    >>> @compat.tf1_graph
    ... class Doubler:
    ...     def __init__(self):
    ...         self.x = tf.compat.v1.placeholder(tf.float32, [None])
    ...         self.y = self.x * 2
    ...         self.sess = tf.compat.v1.Session()
    ...     def __call__(self, x):
    ...         return self.sess.run(self.y, feed_dict={self.x: x})
    >>> Doubler()(np.array([1.0, 2.0], np.float32))
    array([2., 4.], dtype=float32)
    """
    for name, attribute in list(vars(cls).items()):
        if name in ("__new__", "__init_subclass__", "__class_getitem__"):
            continue
        if isinstance(attribute, (staticmethod, classmethod, property)):
            continue
        if callable(attribute):
            setattr(cls, name, _in_own_graph(attribute))
    return cls


def _in_own_graph(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        graph = self.__dict__.get("_compat_tf1_graph")
        if graph is None:
            graph = tf.Graph()
            self.__dict__["_compat_tf1_graph"] = graph
        if not tf.executing_eagerly() and tf.compat.v1.get_default_graph() is graph:
            return method(self, *args, **kwargs)
        with graph.as_default():
            return method(self, *args, **kwargs)

    return wrapper
