# SPDX-License-Identifier: Apache-2.0
"""What the template-saving workaround classes look like, in syntax.

Read-only checks that `template_savers.py` runs on a class before it
replaces it: which attribute holds the template, whether a method only swaps
it in, whether a class is exactly the legacy tutorials' `ParallelModelCheckpoint`, and
whether a ModelMGPU `__init__` only adopts a `multi_gpu_model`. Nothing here
changes the tree or records anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import syntax

# The legacy tutorials' signature, which parallel_keras.ParallelModelCheckpoint keeps.
_LEGACY_PARAMETERS = (
    ("filepath", None),
    ("monitor", "'val_loss'"),
    ("verbose", "0"),
    ("save_best_only", "False"),
    ("save_weights_only", "False"),
    ("mode", "'auto'"),
    ("period", "1"),
)
_SWAP = m.Assign(
    targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name("model")))],
    value=m.Attribute(value=m.Name("self")),
)
_SET_MODEL_WITH_ATTRIBUTE = m.Call(
    func=m.Attribute(attr=m.Name("set_model")),
    args=[m.Arg(value=m.Attribute(value=m.Name("self")))],
)
DICT_UPDATE = m.Call(
    func=m.Attribute(
        value=m.Attribute(value=m.Name("self"), attr=m.Name("__dict__")),
        attr=m.Name("update"),
    ),
    args=[m.Arg(value=m.Attribute(attr=m.Name("__dict__")))],
)


def template_attribute(method: cst.FunctionDef, name: str) -> str | None:
    """`x` when the method swaps in `self.x` for the parallel model."""
    if name == "set_model":
        for call in syntax.findall(method, cst.Call, _SET_MODEL_WITH_ATTRIBUTE):
            # The matcher's: the argument is an attribute of `self`.
            return cast(cst.Attribute, call.args[0].value).attr.value
    if name == "set_model" or (name.startswith("on_") and name.endswith("_end")):
        for assign in syntax.findall(method, cst.Assign, _SWAP):
            return cast(cst.Attribute, assign.value).attr.value  # _SWAP's: `self.x`.
    if name == "set_model" and all(is_docstring(s) for s in syntax.statements(method.body)):
        # `set_model` does nothing, so `self.model` stays what `__init__`
        # assigned: the template.
        return "model"
    return None


def assigned_parameter(init: cst.FunctionDef | None, attribute: str) -> str | None:
    """`p` for `self.<attribute> = p` in `__init__`, p being a parameter."""
    if init is None:
        return None
    parameters = {param.name.value for param in init.params.params}
    target = m.Assign(
        targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name(attribute)))],
        value=m.Name(),
    )
    for assign in syntax.findall(init, cst.Assign, target):
        value = cast(cst.Name, assign.value)  # The matcher's: a name.
        if value.value in parameters:
            return value.value
    return None


def super_init_call(init: cst.FunctionDef | None, base: cst.BaseExpression) -> cst.Call | None:
    """The base-class `__init__` call in `init` (`super()` or by name)."""
    if init is None:
        return None
    base_text = syntax.dotted(base)
    for call in syntax.findall(init, cst.Call, m.Call(func=m.Attribute(attr=m.Name("__init__")))):
        owner = cast(cst.Attribute, call.func).value  # The matcher's: `<owner>.__init__`.
        if isinstance(owner, cst.Call) and syntax.dotted(owner.func) == "super":
            return call
        if syntax.dotted(owner) == base_text:
            return call
    return None


def only_swaps(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether a method only swaps `self.model` and calls the base class."""
    for statement in statements:
        if isinstance(statement, cst.Try):
            blocks = [syntax.statements(statement.body)]
            if statement.finalbody is not None:
                blocks.append(syntax.statements(statement.finalbody.body))
            if statement.handlers or statement.orelse:
                return False
            if not all(only_swaps(block) for block in blocks):
                return False
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(
                small.value, (cst.SimpleString, cst.ConcatenatedString)
            ):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                func = small.value.func
                if isinstance(func, cst.Attribute) and func.attr.value.startswith(
                    ("on_", "set_model")
                ):
                    continue
                return False
            if isinstance(small, cst.Assign):
                texts = [syntax.dotted(t.target) for t in small.targets]
                value = syntax.dotted(small.value)
                if value is not None and ("self.model" in texts or value == "self.model"):
                    continue
            return False
    return True


def is_exact_seed_class(
    classdef: cst.ClassDef,
    init: cst.FunctionDef,
    template_parameter: str,
    super_call: cst.Call,
    swap_methods: dict[str, cst.FunctionDef],
) -> bool:
    """Whether the class is the legacy tutorials' class: same signature, nothing else."""
    if template_parameter != "model":
        return False
    for statement in syntax.statements(classdef.body):
        if isinstance(statement, cst.FunctionDef):
            if statement is not init and statement.name.value not in swap_methods:
                return False
        elif not is_docstring(statement):
            return False
    params = init.params
    if params.star_arg != cst.MaybeSentinel.DEFAULT or params.star_kwarg or params.kwonly_params:
        return False
    names = [param.name.value for param in params.params]
    if names[:2] != ["self", "model"] or len(names) - 2 > len(_LEGACY_PARAMETERS):
        return False
    rest = params.params[2:]
    for param, (name, default) in zip(rest, _LEGACY_PARAMETERS):
        if param.name.value != name:
            return False
        param_default = None
        if param.default is not None:
            param_default = syntax.code(param.default).replace('"', "'")
        if param_default != default:
            return False
    # `Base.__init__(self, ...)` passes `self`; `super().__init__(...)` does not.
    self_passed = isinstance(super_call.func, cst.Attribute) and not isinstance(
        super_call.func.value, cst.Call
    )
    passed = [
        arg
        for arg in super_call.args
        if not (
            isinstance(arg.value, cst.Name)
            and arg.value.value == "self"
            and arg.keyword is None
            and self_passed
        )
    ]
    expected = [param.name.value for param in rest]
    if len(passed) != len(expected):
        return False
    for arg, name in zip(passed, expected):
        if not (isinstance(arg.value, cst.Name) and arg.value.value == name):
            return False
        if arg.keyword is not None and arg.keyword.value != name:
            return False
    for statement in syntax.statements(init.body):
        if is_docstring(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Expr) and small.value is super_call:
            continue
        if isinstance(small, cst.Assign) and syntax.dotted(small.value) == "model":
            continue
        return False
    return True


def is_docstring(statement: cst.BaseStatement) -> bool:
    """Whether `statement` is a lone string or `pass`."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Pass, cst.Expr))
        and (
            isinstance(statement.body[0], cst.Pass)
            or isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        )
    )


def multi_gpu_call(init: cst.FunctionDef, aliases: Iterable[str]) -> cst.Call | None:
    """The `multi_gpu_model(...)` call whose `__dict__` the class adopts."""
    update = syntax.findall(init, cst.Call, DICT_UPDATE)[0]
    source = cast(cst.Attribute, update.args[0].value).value  # DICT_UPDATE's: `x.__dict__`.
    if isinstance(source, cst.Call):
        candidates = [source]
    elif isinstance(source, cst.Name):
        assigns = syntax.findall(
            init,
            cst.Assign,
            m.Assign(targets=[m.AssignTarget(target=m.Name(source.value))], value=m.Call()),
        )
        candidates = [cast(cst.Call, assign.value) for assign in assigns]  # The matcher's: calls.
    else:
        return None
    for call in candidates:
        name = syntax.dotted(call.func) or ""
        if name.split(".")[-1] in {"multi_gpu_model", *aliases}:
            return call
    return None


def only_adopts(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether `__init__` only builds the parallel model and adopts it."""
    for statement in statements:
        if is_docstring(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Assign):
                continue
            if isinstance(small, cst.Expr) and m.matches(small.value, DICT_UPDATE):
                continue
            return False
    return True
