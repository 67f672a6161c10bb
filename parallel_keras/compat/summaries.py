# SPDX-License-Identifier: Apache-2.0
"""Keras 2-era TensorBoard logging: `tf.summary.FileWriter` writing `tf.Summary` protos.

Keras 2 callbacks logged their own values with

    writer = tf.summary.FileWriter(log_dir)
    summary = tf.Summary(value=[tf.Summary.Value(tag='lr', simple_value=lr)])
    writer.add_summary(summary, epoch)

TF 2's `tf.compat.v1.summary.FileWriter` refuses to run eagerly. `FileWriter`
here writes the same `Summary` protos (kept as `tf.compat.v1.Summary`) into
a TF 2 event file, whole, so TensorBoard shows what it showed.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf


class FileWriter:
    """Keras 2-era `tf.summary.FileWriter`: `add_summary(summary, step)` on TF 2.

    Modernise: `writer = tf.summary.create_file_writer(log_dir)` and
    `with writer.as_default(): tf.summary.scalar(tag, value, step=step)`.

    Args:
        logdir: The folder of the event files.
        graph: TF1's graph to draw; TF 2 has none to write. Defaults to None.
        **kwargs: TF1's queue and flush settings; `flush_secs` is kept.

    Example:

    >>> import tempfile, tensorflow as tf
    >>> from parallel_keras import compat
    >>> writer = compat.FileWriter(tempfile.mkdtemp())
    >>> summary = tf.compat.v1.Summary(
    ...     value=[tf.compat.v1.Summary.Value(tag="lr", simple_value=0.1)])
    >>> writer.add_summary(summary, 3)
    >>> writer.close()
    """

    def __init__(self, logdir: str | os.PathLike, graph: Any = None, **kwargs: Any):
        del graph
        self._logdir = os.fspath(logdir)
        flush_millis = int(kwargs.get("flush_secs", 120) * 1000)
        self._writer = tf.summary.create_file_writer(self._logdir, flush_millis=flush_millis)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Writes a `Summary` proto (or its serialized bytes) at `global_step`."""
        data = summary if isinstance(summary, bytes) else summary.SerializeToString()
        with self._writer.as_default():
            tf.summary.experimental.write_raw_pb(data, step=int(global_step or 0))

    def add_graph(self, graph: Any, global_step: int | None = None) -> None:
        """TF 2 runs eagerly: there is no graph to draw; nothing is written."""

    def get_logdir(self) -> str:
        """The folder of the event files."""
        return self._logdir

    def flush(self) -> None:
        """Writes what is buffered."""
        self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file."""
        self._writer.close()

    def reopen(self) -> None:
        """Opens a new event file after `close`, as TF1's writer did."""
        self._writer = tf.summary.create_file_writer(self._logdir)
