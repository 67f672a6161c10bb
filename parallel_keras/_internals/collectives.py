# SPDX-License-Identifier: Apache-2.0
"""Cross-device reductions: collective keys, reduction kind, NCCL kernels.

Upstream surface: TensorFlow's `cross_device_ops.CollectiveAllReduce` and
`cross_device_utils.CollectiveKeys` (tensorflow/python/distribute), the
private `MirroredStrategy.extended._cross_device_ops` and
`CollectiveAllReduce._options`, and the kernel registry
(`tensorflow.python.framework.kernels`). Works around
tensorflow/tensorflow#61314 (collective keys shared across strategies).

Checked on TensorFlow 2.16.2 to 2.21.0 (noxfile.py pairs); `tests/internals/
test_collectives.py` fails when an upgrade changes what this relies on, or
when #61314 is fixed (so the fresh keys can go).
"""

from __future__ import annotations

import itertools

import tensorflow as tf

# --- Collective keys shared across strategies -----------------------------
#
# tensorflow/tensorflow#61314: every `CollectiveAllReduce` built by
# MirroredStrategy starts its collective group and instance keys at the same
# values, and the process-wide collective executor keeps the groups it has
# seen. After training under a 4-device strategy, a new 2- or 3-device
# strategy in the same process fails in its first step (InternalError in
# CollectiveReduceV2). Giving each strategy its own key range keeps their
# groups apart.

_GROUP_KEY_BLOCK = 1_000_000
_group_key_blocks = itertools.count(1)


def collective_all_reduce(
    devices: list[str],
    implementation: tf.distribute.experimental.CommunicationImplementation = (
        tf.distribute.experimental.CommunicationImplementation.AUTO
    ),
) -> tf.distribute.CrossDeviceOps:
    """An all-reduce among `devices` whose collective keys no strategy shares."""
    from tensorflow.python.distribute import cross_device_ops, cross_device_utils

    keys = cross_device_utils.CollectiveKeys(
        group_key_start=1 + next(_group_key_blocks) * _GROUP_KEY_BLOCK
    )
    return cross_device_ops.CollectiveAllReduce(
        devices=list(devices),
        group_size=len(devices),
        options=tf.distribute.experimental.CommunicationOptions(implementation=implementation),
        collective_keys=keys,
    )


# --- Which reduction a strategy performs -------------------------------------
#
# `MirroredStrategy` keeps its cross-device ops in the private
# `extended._cross_device_ops` (mirrored_strategy.py, TF 2.21); a
# `CollectiveAllReduce` keeps its options in `_options`. Read to report the
# reduction in reprs and benchmark records. NCCL availability is what
# `cross_device_ops.select_cross_device_ops` checks: registered
# `NcclAllReduce` kernels.


def cross_device_ops_kind(strategy: tf.distribute.Strategy) -> tuple[str, str | None]:
    """`("one_device", device)`, `("ring", None)` or `("nccl", None)`."""
    ops = getattr(strategy.extended, "_cross_device_ops", None)
    if isinstance(ops, tf.distribute.ReductionToOneDevice):
        return "one_device", ops.reduce_to_device or "/cpu:0"
    if isinstance(ops, tf.distribute.NcclAllReduce):
        return "nccl", None
    options = getattr(ops, "_options", None)
    implementation = getattr(options, "implementation", None)
    if implementation == tf.distribute.experimental.CommunicationImplementation.NCCL:
        return "nccl", None
    return "ring", None


def nccl_kernels_registered() -> bool:
    from tensorflow.python.framework import kernels

    return bool(kernels.get_registered_kernels_for_op("NcclAllReduce").kernel)


# --- Collectives in traced functions (benchmarks) -------------------------
#
# The eager context's function library (`context.context()
# .list_function_names()` / `get_function_def`, tensorflow/python/eager/
# context.py) holds every traced function's FunctionDef. The multi-worker
# benchmark counts the all-reduce ops Keras's traced step issues; the library
# itself never reads it. Checked on TF 2.16.2 and 2.21.0.


def collective_reductions_in_traced_function(name_contains: str) -> dict[str, int]:
    """Collective reduce ops by type, in the traced function with the most.

    Among the functions whose name contains `name_contains`; empty if none.
    """
    import collections

    from tensorflow.python.eager import context

    eager_context = context.context()
    best: collections.Counter[str] = collections.Counter()
    for name in eager_context.list_function_names():
        if name_contains not in name:
            continue
        counts = collections.Counter(
            node.op
            for node in eager_context.get_function_def(name).node_def
            if node.op.startswith("Collective") and "Reduce" in node.op
        )
        if sum(counts.values()) > sum(best.values()):
            best = counts
    return dict(best)
