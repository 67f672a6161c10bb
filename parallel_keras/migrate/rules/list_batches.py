# SPDX-License-Identifier: Apache-2.0
"""Compatibility path: batches holding lists that the generator rule cannot see.

Keras 2 read `[x1, x2], y` and `x, [y1, y2]` batches from a generator or
`keras.utils.Sequence`; Keras 3 refuses a list inside a batch (`TypeError:
output_signature must contain objects that are subclass of tf.TypeSpec`).
The generator rule (rules/generators.py) turns the lists a generator or
`__getitem__` writes itself into tuples. A list made by a helper the batch
calls (`targets = self.compute_targets(...)`, `return
self.__data_generation(ids)`) stays a list: when a function of the file
returns one and a generator or `Sequence` feeding `fit`/`evaluate`/
`predict` (or their `*_generator` forms, or `validation_data`) builds its
batch from that function's result, the data is passed through
`parallel_keras.compat.list_batches(data)`, which reads every list of a
batch as a tuple, as tf.keras 2 did. A parallel model reads list batches
this way itself, so a script gets the same numbers on one device and on
several. `predict`'s data gets `inputs_only=True`: a batch that is not a
tuple is the inputs (`yield [x1, x2]`), as Keras 2 read it.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax, training_calls

RULE = "generators"
_TARGET = "parallel_keras.compat.list_batches"
_MODERN = "yield tuples: (x1, x2), y and x, (y1, y2)"
_REPEATED = "parallel_keras.repeat_sequence"  # rules/generators.py cycles a Sequence in it.
_PREDICT = frozenset({"predict", "predict_generator"})


def _own(function: cst.FunctionDef, kind: type) -> list:
    """The `kind` nodes of `function` outside its nested functions and classes."""
    found: list = []

    class _Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is function

        def visit_ClassDef(self, node):
            return False

        def on_visit(self, node):
            if isinstance(node, kind):
                found.append(node)
            return super().on_visit(node)

    function.visit(_Finder())
    return found


def _list_names(function: cst.FunctionDef) -> set[str]:
    """Names `function` binds only to lists (`targets = [a, b]`, `batch = []`)."""
    lists: set[str] = set()
    others: set[str] = set()
    for assign in _own(function, cst.Assign):
        is_list = isinstance(assign.value, (cst.List, cst.ListComp))
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                (lists if is_list else others).add(target.target.value)
    for augmented in _own(function, cst.AugAssign):
        if isinstance(augmented.target, cst.Name):
            others.add(augmented.target.value)
    return lists - others


def _is_list(node: cst.BaseExpression, names: set[str]) -> bool:
    return isinstance(node, (cst.List, cst.ListComp)) or (
        isinstance(node, cst.Name) and node.value in names
    )


def _parts(value: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    if isinstance(value, cst.Tuple):
        return [element.value for element in value.elements]
    return [value] if value is not None else []


def _returns_list(function: cst.FunctionDef) -> bool:
    """Whether `function` returns a list, or a tuple holding one (`return [x1, x2], y`)."""
    names = _list_names(function)
    return any(
        _is_list(value, names) or any(_is_list(part, names) for part in _parts(value))
        for value in (found.value for found in _own(function, cst.Return))
        if value is not None
    )


def _called(node: cst.BaseExpression) -> str:
    """`f` for `f(...)`, `self.f(...)`, `module.f(...)`; '' for anything else."""
    if isinstance(node, cst.Call):
        return (syntax.dotted(node.func) or "").rpartition(".")[2]
    return ""


def _batch_calls(function: cst.FunctionDef, kind: type) -> set[str]:
    """The functions whose results `function`'s batches (its `kind` values) hold."""
    calls_of: dict[str, str] = {}
    for assign in _own(function, cst.Assign):
        called = _called(assign.value)
        for target in assign.targets:
            if isinstance(target.target, cst.Name) and called:
                calls_of[target.target.value] = called
    functions = set()
    for found in _own(function, kind):
        for part in _parts(found.value):
            name = calls_of.get(part.value, "") if isinstance(part, cst.Name) else _called(part)
            if name:
                functions.add(name)
    return functions


def _bare_list(function: cst.FunctionDef, kind: type) -> bool:
    """Whether a batch of `function` is a list itself (`yield [x1, x2]`: predict's inputs)."""
    names = _list_names(function)
    return any(
        found.value is not None and _is_list(found.value, names) for found in _own(function, kind)
    )


class ListBatchesRule(context.Rule):
    """`model.fit(make_batches(...))` -> `model.fit(compat.list_batches(make_batches(...)))`."""

    name = RULE

    def __init__(self):
        self._list_returning: set[str] = set()  # functions returning a list
        self._batch_calls: dict[str, set[str]] = {}  # generator/Sequence -> what its batch calls
        self._bare_lists: set[str] = set()  # generators/Sequences whose batch is a list
        self._list_batches: set[str] = set()
        self._calls_of: dict[str, str] = {}  # variable -> function whose call it holds

    def visit_FunctionDef(self, ctx, node):
        name = node.name.value
        if _returns_list(node):
            self._list_returning.add(name)
        if _own(node, cst.Yield):
            self._batch_calls[name] = _batch_calls(node, cst.Yield)
            if _bare_list(node, cst.Yield):
                self._bare_lists.add(name)

    def visit_ClassDef(self, ctx, node):
        for item in node.body.body:
            if isinstance(item, cst.FunctionDef) and item.name.value == "__getitem__":
                self._batch_calls[node.name.value] = _batch_calls(item, cst.Return)
                if _bare_list(item, cst.Return):
                    self._bare_lists.add(node.name.value)

    def visit_Assign(self, ctx, node):
        called = _called(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name) and called:
                self._calls_of[target.target.value] = called

    def finish_scan(self, ctx):
        self._list_batches = {
            name for name, called in self._batch_calls.items() if called & self._list_returning
        }

    def _source(self, value: cst.BaseExpression) -> str:
        """The generator function or Sequence class `value` is a call (or an instance) of."""
        if (
            isinstance(value, cst.Call)
            and syntax.dotted(value.func) == _REPEATED
            and syntax.positional(value)
        ):
            value = syntax.positional(value)[0].value  # The generator rule's, already.
        if isinstance(value, cst.Name):
            return self._calls_of.get(value.value, "")
        return _called(value)

    def leave_Call(self, ctx, original, updated):
        method = syntax.method_name(updated)
        func = updated.func
        if method not in training_calls.METHODS or not isinstance(func, cst.Attribute):
            return updated
        predict = method in _PREDICT
        wrapped = set()
        for arg in training_calls.data_arguments(updated):
            source = self._source(arg.value)
            if source in self._list_batches or (predict and source in self._bare_lists):
                wrapped.add(id(arg))
        if not wrapped:
            return updated
        ctx.require_import("parallel_keras.compat")
        model = syntax.code(func.value)
        ctx.compat(
            original,
            RULE,
            f"the data of `{model}.{method}` builds its batches from a function returning "
            f"a list -> `{_TARGET}(...)`: Keras 2 read a list in a batch as the inputs "
            "(targets) in order; Keras 3 refuses it",
            modern=_MODERN,
        )

        def wrap(arg: cst.Arg) -> cst.Arg:
            args = [cst.Arg(arg.value)]
            if predict:
                args = [
                    cst.Arg(arg.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    syntax.make_arg("inputs_only", cst.Name("True")),
                ]
            return arg.with_changes(value=cst.Call(func=syntax.expression(_TARGET), args=args))

        return training_calls.with_data_wrapped(updated, wrapped, wrap)


AUDIT = [
    (
        "model.fit/evaluate/predict(<generator or Sequence whose batch holds a list a "
        "helper of the file returns>)",
        f"model.fit({_TARGET}(data))",
        "Keras 2 read a list in a batch as the inputs (targets) in order; Keras 3 refuses it",
        _MODERN,
    ),
]
