# SPDX-License-Identifier: Apache-2.0
"""Op callbacks for the op-device recorder.

Upstream surface: `tensorflow.python.framework.op_callbacks`
(`add_op_callback` / `remove_op_callback`), the hook
`tf.debugging.experimental.enable_check_numerics` is built on.

Checked on TensorFlow 2.16.2 to 2.21.0 (noxfile.py pairs); `tests/internals/
test_op_callbacks.py` fails when an upgrade changes what this relies on.
"""

from __future__ import annotations

from collections.abc import Callable

# --- Op callbacks for the op-device recorder --------------------
#
# `tensorflow.python.framework.op_callbacks` is the hook that
# `tf.debugging.experimental.enable_check_numerics` is built on: a callback
# sees every eager op execution (with its output tensors, whose `.device` is
# where the op ran) and every op created while tracing a graph (with its
# symbolic outputs, whose `.op.device` is the placement asked of the placer).
# Checked on TF 2.21.


def add_op_callback(callback: Callable[..., None]) -> None:
    from tensorflow.python.framework import op_callbacks

    op_callbacks.add_op_callback(callback)


def remove_op_callback(callback: Callable[..., None]) -> None:
    from tensorflow.python.framework import op_callbacks

    op_callbacks.remove_op_callback(callback)
