# SPDX-License-Identifier: Apache-2.0
"""Rewrite: NumPy names legacy scripts use that NumPy 2 removed.

TensorFlow 2.21 installs NumPy 2, which removed the aliases of Python's
builtins (`np.float`, `np.int`, `np.bool`, `np.object`, `np.str`, removed in
1.24 already), the capitalized constants (`np.Inf`, `np.NaN`, `np.NINF`) and
a set of duplicate functions (`np.asscalar`, `np.product`, `np.alltrue`,
...). Each is rewritten to the exact equivalent NumPy's migration guide
names (https://numpy.org/devdocs/numpy_2_0_migration_guide.html): the
builtin aliases were the builtins themselves, so `np.float` becomes `float`
(not `np.float64`, which would change `isinstance` checks and scalar types).
Removed names with no exact equivalent are flagged.
"""

from __future__ import annotations

import re

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "NumPy 2"

# Removed name -> exact replacement; `np.` means the script's numpy module.
_RENAMES = {
    "float": "float",
    "int": "int",
    "bool": "bool",  # np.bool is back in NumPy 2, but as np.bool_, not the builtin.
    "object": "object",
    "str": "str",
    "unicode": "str",
    "complex": "complex",
    "Inf": "np.inf",
    "Infinity": "np.inf",
    "infty": "np.inf",
    "PINF": "np.inf",
    "NINF": "(-np.inf)",
    "NaN": "np.nan",
    "NAN": "np.nan",
    "PZERO": "0.0",
    "NZERO": "(-0.0)",
    "float_": "np.float64",
    "complex_": "np.complex128",
    "cfloat": "np.complex128",
    "singlecomplex": "np.complex64",
    "longfloat": "np.longdouble",
    "clongfloat": "np.clongdouble",
    "longcomplex": "np.clongdouble",
    "string_": "np.bytes_",
    "unicode_": "np.str_",
    "bool8": "np.bool_",
    "object0": "np.object_",
    "str0": "np.str_",
    "bytes0": "np.bytes_",
    "int0": "np.intp",
    "uint0": "np.uintp",
    "product": "np.prod",
    "cumproduct": "np.cumprod",
    "alltrue": "np.all",
    "sometrue": "np.any",
    "round_": "np.round",
    "mat": "np.asmatrix",
    "trapz": "np.trapezoid",
    "issubclass_": "issubclass",
}
# Removed functions rewritten as a call of another shape: name -> (template, reason).
_CALLS = {
    "asscalar": ("np.asarray({0}).item()", "asscalar(a) was a.item()"),
    "msort": ("np.sort({0}, axis=0)", "msort(a) was sort(a, axis=0)"),
}
_FLAGS = {
    "find_common_type": "use np.result_type(...) or np.promote_types(a, b).",
    "set_string_function": "use np.set_printoptions(formatter=...).",
    "safe_eval": "use ast.literal_eval(...).",
    "recfromcsv": "use np.genfromtxt(path, delimiter=',', names=True, dtype=None).",
    "cast": "use np.asarray(x, dtype=...).",
    "in1d": "use np.isin(a, b).ravel() (in1d flattened its result).",
    "deprecate": "delete the decorator or use warnings.warn.",
}


def _numpy_attr(ctx: context.Context, node: cst.Attribute) -> tuple[str, str] | None:
    """`("np", "float")` for `np.float` (numpy under any local name), else None."""
    if not isinstance(node.value, cst.Name):
        return None
    module = node.value.value
    qualified = ctx.qualified_name(node) or ""
    if qualified.startswith("numpy."):
        return module, qualified[len("numpy.") :]
    if qualified.startswith("np.") and qualified == syntax.dotted(node):
        return module, qualified[len("np.") :]  # A snippet that never imports numpy.
    return None


def _exists_here(template: str) -> bool:
    """Whether the installed NumPy has the replacement `template` names.

    `np.trapezoid` came with NumPy 2.0, the release that deprecated
    `np.trapz` (removed in 2.4): under NumPy 1.x (TensorFlow 2.16-2.17) the
    old name is still the one that runs, so it is kept.
    """
    import numpy

    return all(hasattr(numpy, attribute) for attribute in _NUMPY_NAME.findall(template))


_NUMPY_NAME = re.compile(r"\bnp\.(\w+)")


def _spelled(template: str, module: str) -> str:
    return template.replace("np.", f"{module}.")


class NumPy2Rule(context.Rule):
    """`np.float` -> `float`, `np.Inf` -> `np.inf`, `np.asscalar(a)` -> `np.asarray(a).item()`."""

    name = RULE

    def __init__(self):
        # np.meshgrid calls whose tuple is fine: unpacked, or already list(...).
        self._meshgrid_kept: set[int] = set()

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call) and all(
            isinstance(target.target, (cst.Tuple, cst.List)) for target in node.targets
        ):
            self._meshgrid_kept.add(id(node.value))

    def visit_Call(self, ctx, node):
        if isinstance(node.func, cst.Name) and node.func.value in ("list", "tuple"):
            self._meshgrid_kept.update(id(arg.value) for arg in node.args)

    def leave_Call(self, ctx, original, updated):
        if not isinstance(original.func, cst.Attribute):
            return updated
        found = _numpy_attr(ctx, original.func)
        if found is not None and found[1] == "meshgrid":
            if id(original) in self._meshgrid_kept:
                return updated
            # NumPy 2 returns a tuple; NumPy 1 a list (np.block refuses tuples,
            # `grids.append` / item assignment fail on them).
            ctx.change(
                original,
                RULE,
                f"`{found[0]}.meshgrid(...)` -> `list({found[0]}.meshgrid(...))`: NumPy 2 "
                "returns a tuple, NumPy 1 returned a list",
            )
            return cst.Call(cst.Name("list"), args=[cst.Arg(updated)])
        if found is None or found[1] not in _CALLS:
            return updated
        module, name = found
        template, reason = _CALLS[name]
        if len(updated.args) != 1 or updated.args[0].keyword or updated.args[0].star:
            ctx.flag(
                original,
                RULE,
                f"`np.{name}` was removed in NumPy 2",
                f"use {_spelled(template, module).format('a')} ({reason}).",
            )
            return updated
        new = _spelled(template, module).format(syntax.code(updated.args[0].value))
        ctx.change(original, RULE, f"`{module}.{name}(a)` -> `{new}`: removed in NumPy 2; {reason}")
        return syntax.expression(new)

    def leave_Attribute(self, ctx, original, updated):
        found = _numpy_attr(ctx, original)
        if found is None:
            return updated
        module, name = found
        if name in _RENAMES and _exists_here(_RENAMES[name]):
            new = _spelled(_RENAMES[name], module)
            ctx.change(
                original,
                RULE,
                f"`{module}.{name}` -> `{new}`: removed in NumPy 2 (the exact equivalent)",
            )
            return syntax.expression(new)
        if name in _FLAGS:
            ctx.flag(original, RULE, f"`{module}.{name}` was removed in NumPy 2", _FLAGS[name])
        return updated


AUDIT = [
    (
        "np.meshgrid(...) (not unpacked)",
        "list(np.meshgrid(...))",
        "NumPy 2 returns a tuple, NumPy 1 returned a list",
    ),
    *(
        (f"np.{old}", new, "removed in NumPy 2; the exact equivalent")
        for old, new in sorted(_RENAMES.items())
    ),
    *(
        (f"np.{old}(a)", template.format("a"), f"removed in NumPy 2; {reason}")
        for old, (template, reason) in sorted(_CALLS.items())
    ),
    *((f"np.{old}", None, f"removed in NumPy 2: {fix}") for old, fix in sorted(_FLAGS.items())),
]
