# SPDX-License-Identifier: Apache-2.0
"""Rewrite: GPU-count idioms of TF1 scripts -> the devices TF 2 sees.

Scripts computed `multi_gpu_model`'s `gpus` from TF1 helpers:
`K.tensorflow_backend._get_available_gpus()` (gone in Keras 3),
`[d.name for d in K.get_session().list_devices() if d.device_type == 'GPU']`
(no sessions in TF 2) or the same over `device_lib.list_local_devices()`
(physical devices only, so it never sees simulated ones). Each becomes the
names of the logical GPUs, or, on a machine without GPU where
`parallel_keras.simulate_devices` made CPU devices, of those: the devices
`multi_gpu_model` would replicate on.

Every other use of Keras 2's `K.device_lib` (TensorFlow's `device_lib`, which
Keras 2's TensorFlow backend module imported; Keras 3 has none) becomes
`parallel_keras.compat.device_lib`, the same listing.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax

RULE = "GPU count"

DEVICE_LIB_WHY = (
    "Keras 2's TensorFlow backend module imported TensorFlow's device_lib; Keras 3's "
    "keras.backend has none. The same listing: the physical devices as DeviceAttributes "
    "protos (name, device_type, memory_limit, physical_device_desc)"
)
DEVICE_LIB_MODERN = (
    "tf.config.list_logical_devices() (name, device_type), or tf.config.list_physical_devices()"
)
_COMPAT_DEVICE_LIB = "parallel_keras.compat.device_lib"


# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str] | tuple[str, str, str, str]] = [
    (
        "K.tensorflow_backend._get_available_gpus()",
        "names of the logical (or simulated) GPUs",
        "Keras 3 has no TensorFlow backend module",
    ),
    (
        "[d for d in K.get_session().list_devices() if ...'GPU'...]",
        "the logical (or simulated) GPUs",
        "TF 2 has no sessions",
    ),
    (
        "[d for d in device_lib.list_local_devices() if ...'GPU'... / d.name[:4] == '/gpu']",
        "the logical (or simulated) GPUs",
        "physical devices never include simulated ones",
    ),
    (
        "[d.name for d in K.device_lib.list_local_devices() if ...]",
        "the logical (or simulated) GPUs",
        "Keras 2's TensorFlow backend module imported TF's device_lib; Keras 3 has none",
    ),
    (
        "for d in device_lib.list_local_devices(): if d.device_type != 'GPU': ...",
        "the logical (or simulated) GPUs",
        "physical devices never include simulated ones",
    ),
    ("K.get_session().list_devices()", "tf.config.list_logical_devices()", "TF 2 has no sessions"),
    (
        "K.device_lib (any other use)",
        _COMPAT_DEVICE_LIB,
        DEVICE_LIB_WHY,
        DEVICE_LIB_MODERN,
    ),
]


_DEVICES = (
    "({tf}.config.list_logical_devices('GPU') or ({tf}.config.list_logical_devices('CPU') "
    "if parallel_keras.devices.gpus_are_simulated() else []))"
)
_NAMES = "[device.name for device in " + _DEVICES[1:-1] + "]"
_LIST = "[device for device in " + _DEVICES[1:-1] + "]"
_AVAILABLE_GPUS = "keras.backend._get_available_gpus"
_LIST_SOURCES = ("keras.backend.get_session", "tensorflow.Session")
# TF's device_lib, also as Keras 2's TensorFlow backend imported it (`K.device_lib`).
_LOCAL_DEVICES = frozenset(
    {
        "tensorflow.python.client.device_lib.list_local_devices",
        "keras.backend.device_lib.list_local_devices",
        "keras.backend.tensorflow_backend.device_lib.list_local_devices",
        f"{_COMPAT_DEVICE_LIB}.list_local_devices",
    }
)
# Keras 2's `K.device_lib`, as the backend module or its TensorFlow module spelled it.
_BACKEND_DEVICE_LIB = frozenset(
    {"keras.backend.device_lib", "keras.backend.tensorflow_backend.device_lib"}
)


def _is_gpu_string(value: str) -> bool:
    """'GPU' as a device type, or a device-name prefix: '/gpu', '/gpu:', '/device:GPU'."""
    value = value.upper().lstrip("/").rstrip(":")
    return value in ("GPU", "DEVICE:GPU")


def _mentions_gpu(node: cst.CSTNode) -> bool:
    """A `'GPU'` test, or a name-prefix test (`d.name[:11] == '/device:GPU'`)."""
    return any(
        _is_gpu_string(syntax.string_value(string) or "")
        for string in syntax.findall(node, cst.SimpleString)
    )


def _is_device_or_its_name(element: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    if not isinstance(target, cst.Name):
        return False
    if isinstance(element, cst.Attribute) and element.attr.value == "name":
        element = element.value
    return isinstance(element, cst.Name) and element.value == target.value


def _is_gpu_type_test(comparison: cst.Comparison, target: str) -> bool:
    """`<target>.device_type == 'GPU'` (or `!=`)."""
    left = comparison.left
    return (
        len(comparison.comparisons) == 1
        and isinstance(comparison.comparisons[0].operator, (cst.Equal, cst.NotEqual))
        and isinstance(left, cst.Attribute)
        and left.attr.value == "device_type"
        and isinstance(left.value, cst.Name)
        and left.value.value == target
        and (syntax.string_value(comparison.comparisons[0].comparator) or "").upper() == "GPU"
    )


class GpuCountRule(context.Rule):
    """`len(K.tensorflow_backend._get_available_gpus())` -> `len([... logical GPUs])`."""

    name = RULE
    writes = {"handled_calls": context.Phase.SCAN}

    def __init__(self):
        self._listing_names: set[str] = set()  # `protos = device_lib.list_local_devices()`
        self._in_comprehension: set[int] = set()
        # `for d in <listing>:` loops that keep the GPUs by `d.device_type`,
        # and those tests of `d.device_type` against 'GPU'.
        self._gpu_loops: set[int] = set()
        self._gpu_tests: set[int] = set()
        # Attributes inside a GPU list rewritten as a whole (its `K.device_lib`).
        self._in_rewritten: set[int] = set()

    def visit_For(self, ctx, node):
        """`for d in device_lib.list_local_devices(): if d.device_type != 'GPU': ...`."""
        if not isinstance(node.target, cst.Name) or not self._device_listing(ctx, node.iter):
            return
        tests = [
            comparison
            for comparison in syntax.findall(node.body, cst.Comparison)
            if _is_gpu_type_test(comparison, node.target.value)
        ]
        if tests:
            self._gpu_loops.add(id(node))
            self._gpu_tests.update(id(test) for test in tests)
            # The loop's listing is rewritten; its call is not on its own.
            self._in_comprehension.update(id(call) for call in m.findall(node.iter, m.Call()))
            self._in_rewritten.update(id(part) for part in m.findall(node.iter, m.Attribute()))
            ctx.facts.handled_calls.update(self._in_comprehension)

    def leave_For(self, ctx, original, updated):
        if id(original) not in self._gpu_loops:
            return updated
        ctx.require_import("parallel_keras.devices")
        ctx.change(
            original,
            RULE,
            f"the devices of `{syntax.code(original.iter)}` kept by their type 'GPU' "
            "-> the logical GPUs, or the simulated devices parallel_keras replicates "
            "on when there is no GPU",
        )
        return updated.with_changes(iter=syntax.expression(_LIST.format(tf=ctx.tf_module())))

    def leave_Comparison(self, ctx, original, updated):
        if id(original) not in self._gpu_tests:
            return updated
        # Every device the loop now reads is one multi_gpu_model replicates on:
        # a simulated one counts as the GPU it stands for.
        simulated = syntax.expression("parallel_keras.devices.gpus_are_simulated()")
        test = updated.with_changes(lpar=[], rpar=[])
        if isinstance(original.comparisons[0].operator, cst.Equal):
            return cst.BooleanOperation(
                left=test,
                operator=cst.Or(),
                right=simulated,
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            )
        return cst.BooleanOperation(
            left=test,
            operator=cst.And(),
            right=cst.UnaryOperation(operator=cst.Not(), expression=simulated),
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )

    def visit_Assign(self, ctx, node):
        if self._device_listing(ctx, node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._listing_names.add(target.target.value)

    def _device_listing(self, ctx, call: cst.CSTNode) -> bool:
        """`K.get_session().list_devices()` or `device_lib.list_local_devices()`."""
        if isinstance(call, cst.Name):
            return call.value in self._listing_names
        if not isinstance(call, cst.Call):
            return False
        if ctx.qualified_name(call.func) in _LOCAL_DEVICES:
            return True
        return (
            syntax.method_name(call) == "list_devices"
            and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Call)
            and ctx.qualified_name(call.func.value.func) in _LIST_SOURCES
        )

    def _gpu_comprehension(self, ctx, node) -> bool:
        """`[d.name for d in <listing> if <GPU test>]` (or `[d for ...]`).

        Only that form becomes the logical GPUs: another element
        (`d.physical_device_desc`) or another condition (`and 'K80' in ...`)
        has no logical-device equivalent: the comprehension is kept, and only
        a session's listing in it is rewritten.
        """
        if len(node.for_in.ifs) != 1:
            return False
        test = node.for_in.ifs[0].test
        # `d.device_type == 'GPU'`, `d.name[:4] == '/gpu'`, `d.name.startswith('/gpu')`.
        one_test = (isinstance(test, cst.Comparison) and len(test.comparisons) == 1) or (
            isinstance(test, cst.Call) and syntax.method_name(test) == "startswith"
        )
        return (
            one_test
            and node.for_in.inner_for_in is None
            and _is_device_or_its_name(node.elt, node.for_in.target)
            and self._device_listing(ctx, node.for_in.iter)
            and _mentions_gpu(node.for_in)
        )

    def visit_ListComp(self, ctx, node):
        if self._gpu_comprehension(ctx, node):
            handled = ctx.facts.handled_calls
            handled.update(id(call) for call in m.findall(node, m.Call()))
            # The whole comprehension is rewritten; its listing call is not.
            self._in_comprehension.update(id(call) for call in m.findall(node, m.Call()))
            self._in_rewritten.update(id(part) for part in m.findall(node, m.Attribute()))

    def leave_ListComp(self, ctx, original, updated):
        if not self._gpu_comprehension(ctx, original):
            return updated
        element = original.elt
        names = isinstance(element, cst.Attribute) and element.attr.value == "name"
        template = _NAMES if names else _LIST
        ctx.require_import("parallel_keras.devices")
        ctx.change(
            original,
            RULE,
            f"the GPUs listed by `{syntax.code(original.for_in.iter)}` "
            "-> "
            "the logical GPUs, or the simulated devices parallel_keras replicates "
            "on when there is no GPU",
        )
        return syntax.expression(template.format(tf=ctx.tf_module()))

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func)
        if qualified == _AVAILABLE_GPUS:
            ctx.require_import("parallel_keras.devices")
            ctx.change(
                original,
                RULE,
                f"`{syntax.dotted(original.func)}()` -> the names of the logical "
                "GPUs, or of the simulated devices when there is no GPU "
                "(Keras 3 has no TensorFlow backend module)",
            )
            return syntax.expression(_NAMES.format(tf=ctx.tf_module()))
        if (
            isinstance(original, cst.Call)
            and self._device_listing(ctx, original)
            and ctx.qualified_name(original.func) not in _LOCAL_DEVICES
        ):
            if id(original) in self._in_comprehension:
                return updated
            ctx.change(
                original,
                RULE,
                "`K.get_session().list_devices()` -> `tf.config.list_logical_devices()` "
                "(TF 2 has no sessions)",
            )
            return syntax.expression(f"{ctx.tf_module()}.config.list_logical_devices()")
        return updated

    def visit_Call(self, ctx, node):
        if self._device_listing(ctx, node) and syntax.method_name(node) == "list_devices":
            ctx.facts.handled_calls.update((id(node), id(node.func.value)))

    def leave_Attribute(self, ctx, original, updated):
        """`K.device_lib` (outside a GPU list) -> `parallel_keras.compat.device_lib`."""
        if original.attr.value != "device_lib" or id(original) in self._in_rewritten:
            return updated
        if syntax.canonical_name(ctx.qualified_name(original)) not in _BACKEND_DEVICE_LIB:
            return updated
        ctx.require_import("parallel_keras")
        ctx.compat(
            original,
            RULE,
            f"`{syntax.dotted(original)}` -> `{_COMPAT_DEVICE_LIB}`: {DEVICE_LIB_WHY}",
            DEVICE_LIB_MODERN,
        )
        return syntax.expression(_COMPAT_DEVICE_LIB)
