# SPDX-License-Identifier: Apache-2.0
"""Where TensorFlow ops really ran: a recorder for tests.

`parallel_keras.placement(model)` says which device each layer call asked
for. This recorder checks the outcome, independently of how placement was
made: every eager op executed inside it is recorded with the device of its
outputs (where it ran), and every op created while a `tf.function` is traced
inside it (e.g. `fit`'s train step, `predict`'s step) is recorded with the
device it is pinned to in the graph handed to TensorFlow's placer.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tensorflow as tf

# TensorFlow is imported inside the functions so that importing
# parallel_keras.testing (e.g. for run_python) stays light; so is
# `parallel_keras.devices`, whose `short_device_name` names the devices.


@dataclasses.dataclass(frozen=True)
class OpRecord:
    """One recorded op.

    Attributes:
        op_type: The op type, e.g. `'MatMul'`.
        name: For an eager op, the name scope it ran in (e.g.
            `'lstm/lstm_cell'`); for a traced op, its full graph name (e.g.
            `'functional_1/lstm_1/while/MatMul'`).
        device: Short device name such as `'/cpu:1'`: for an eager op where
            it ran, for a traced op where the graph pins it; None when a
            traced op is left to the placer.
        traced: True for an op created while tracing a `tf.function`.
    """

    op_type: str
    name: str
    device: str | None
    traced: bool


class OpDeviceRecorder:
    """The ops recorded by `record_op_devices`, with simple queries."""

    def __init__(self):
        self._eager: list[OpRecord] = []
        self._traced_ops: list[tuple[str, tf.Operation]] = []

    @property
    def eager(self) -> list[OpRecord]:
        """The eager ops, in execution order."""
        return list(self._eager)

    @property
    def traced(self) -> list[OpRecord]:
        """The traced graph ops, in creation order."""
        # Read devices now: a graph op's device is final once it exists.
        from parallel_keras import devices

        return [
            OpRecord(
                op_type=op_type,
                name=operation.name,
                device=devices.short_device_name(operation.device),
                traced=True,
            )
            for op_type, operation in self._traced_ops
        ]

    def device_counts(
        self, name_contains: str = "", *, traced: bool | None = None
    ) -> collections.Counter:
        """Counts ops per device, optionally filtered.

        Args:
            name_contains: Keep only ops whose `name` contains this string.
                Defaults to "" (all ops).
            traced: True for traced ops only, False for eager ops only.
                Defaults to None (both).

        Returns:
            A `collections.Counter` mapping short device name (or None) to
            the number of ops.
        """
        records = []
        if traced in (None, False):
            records += self._eager
        if traced in (None, True):
            records += self.traced
        return collections.Counter(
            record.device for record in records if name_contains in record.name
        )

    def _on_op(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        del inputs, attrs, op_name  # Unused.
        import tensorflow as tf

        from parallel_keras import devices

        op_type = op_type.decode() if isinstance(op_type, bytes) else op_type
        if graph is None:
            device = next((tensor.device for tensor in outputs), None)
            self._eager.append(
                OpRecord(
                    op_type=op_type,
                    name=tf.get_current_name_scope(),
                    device=devices.short_device_name(device),
                    traced=False,
                )
            )
        else:
            seen = set()
            for tensor in outputs:
                if id(tensor.op) not in seen:
                    seen.add(id(tensor.op))
                    self._traced_ops.append((op_type, tensor.op))
        return None  # Leave the op's outputs unchanged.


@contextlib.contextmanager
def record_op_devices() -> Iterator[OpDeviceRecorder]:
    """Records the device of every op run or traced inside the block.

    Ops without outputs (e.g. `NoOp`, variable assignments) are not seen in
    eager mode. `tf.function`s traced before the block are not re-traced:
    build a fresh model (or call it with a new input signature) inside it.

    Yields:
        An `OpDeviceRecorder`, filled as ops run.

    Example:

    >>> import tensorflow as tf
    >>> from parallel_keras.testing import record_op_devices
    >>> with record_op_devices() as ops:
    ...     with tf.device('/cpu:0'):
    ...         _ = tf.constant(1.0) + 1.0
    >>> ops.device_counts(traced=False)['/cpu:0'] >= 1
    True
    """
    from parallel_keras import _internals

    recorder = OpDeviceRecorder()
    _internals.add_op_callback(recorder._on_op)
    try:
        yield recorder
    finally:
        _internals.remove_op_callback(recorder._on_op)
