# SPDX-License-Identifier: Apache-2.0
"""Compatibility path: data whose batches are dicts, read by the model's names.

Keras 2 read a dict of inputs (targets) by the model's input (output)
names and ignored other keys; Keras 2's `image_ocr` example, copied by many
CTC projects, yields `({'the_input': ..., 'source_str': <strings>, ...},
{'ctc': ...})` and Keras 3 fails converting the strings. When the data of a
`fit`/`evaluate`/`predict` call (or their `*_generator` forms, or its
`validation_data`) is the result of a function of the project that yields
dicts (or a Sequence class whose `__getitem__` returns them), the data is
passed through `parallel_keras.compat.named_batches(model, data)`. A
parallel model reads dicts this way itself, so a script gets the same
numbers on one device and on several.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax, training_calls

RULE = "generators"
_TARGET = "parallel_keras.compat.named_batches"
_MODERN = "yield only the model's inputs and targets (tuples, or dicts with exactly their names)"


def _is_dict(node: cst.BaseExpression, dict_names: set[str]) -> bool:
    return (
        isinstance(node, cst.Dict)
        or (isinstance(node, cst.Name) and node.value in dict_names)
        or (isinstance(node, cst.Call) and syntax.dotted(node.func) == "dict")
    )


def _dict_names(function: cst.FunctionDef) -> set[str]:
    names = set()
    for assign in syntax.findall(function.body, cst.Assign):
        if isinstance(assign.value, cst.Dict) or (
            isinstance(assign.value, cst.Call) and syntax.dotted(assign.value.func) == "dict"
        ):
            names |= {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)}
    return names


def _makes_dicts(function: cst.FunctionDef, kind: type[cst.Yield] | type[cst.Return]) -> bool:
    """Whether `function` yields (`kind` Yield) or returns a dict or a tuple holding one."""
    names = _dict_names(function)
    found: list[cst.Yield | cst.Return] = list(syntax.findall(function.body, kind))
    for node in found:
        value = node.value
        parts = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        if any(isinstance(part, cst.BaseExpression) and _is_dict(part, names) for part in parts):
            return True
    return False


class NamedBatchesRule(context.Rule):
    """`model.fit(make_dict_batches(...))` -> `model.fit(compat.named_batches(model, ...))`."""

    name = RULE

    def __init__(self):
        self._dict_batches: set[str] = set()  # yield dict batches (or Sequence classes)
        self._returning: set[str] = set()  # return a dict batch
        self._yielded_calls: dict[str, set[str]] = {}  # function -> functions it yields calls of
        self._calls_of: dict[str, str] = {}  # variable -> function whose call it holds

    def visit_FunctionDef(self, ctx, node):
        name = node.name.value
        if _makes_dicts(node, cst.Yield):
            self._dict_batches.add(name)
        if _makes_dicts(node, cst.Return):
            self._returning.add(name)
        for found in syntax.findall(node.body, cst.Yield):
            if isinstance(found.value, cst.Call):
                called = (syntax.dotted(found.value.func) or "").rpartition(".")[2]
                self._yielded_calls.setdefault(name, set()).add(called)

    def finish_scan(self, ctx):
        project = getattr(ctx, "project", None)
        returning = self._returning | set(getattr(project, "dict_returning_functions", ()) or ())
        self._dict_batches |= {
            function for function, called in self._yielded_calls.items() if called & returning
        }

    def visit_ClassDef(self, ctx, node):
        for item in node.body.body:
            if (
                isinstance(item, cst.FunctionDef)
                and item.name.value == "__getitem__"
                and _makes_dicts(item, cst.Return)
            ):
                self._dict_batches.add(node.name.value)

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call):
            called = (syntax.dotted(node.value.func) or "").rpartition(".")[2]
            for target in node.targets:
                if isinstance(target.target, cst.Name) and called:
                    self._calls_of[target.target.value] = called

    def _dict_data(self, ctx, value: cst.BaseExpression) -> bool:
        functions = self._dict_batches | set(
            getattr(getattr(ctx, "project", None), "dict_batch_functions", ()) or ()
        )
        if isinstance(value, cst.Call):
            called = (syntax.dotted(value.func) or "").rpartition(".")[2]
        elif isinstance(value, cst.Name):
            called = self._calls_of.get(value.value, "")
        else:
            return False
        return called in functions

    def leave_Call(self, ctx, original, updated):
        method = syntax.method_name(updated)
        func = updated.func
        if method not in training_calls.METHODS or not isinstance(func, cst.Attribute):
            return updated
        wrapped = {
            id(arg)
            for arg in training_calls.data_arguments(updated)
            if self._dict_data(ctx, arg.value)
            and not (isinstance(arg.value, cst.Call) and syntax.dotted(arg.value.func) == _TARGET)
        }
        if not wrapped:
            return updated
        ctx.require_import("parallel_keras.compat")
        model = syntax.code(func.value)
        ctx.compat(
            original,
            RULE,
            f"the data of `{model}.{method}` yields dicts -> `{_TARGET}({model}, ...)`: "
            "Keras 2 read them by the model's input and output names and ignored other "
            "keys; Keras 3 converts every key",
            modern=_MODERN,
        )

        def wrap(arg: cst.Arg) -> cst.Arg:
            call = cst.Call(
                func=syntax.expression(_TARGET),
                args=[
                    cst.Arg(
                        func.value,
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                    ),
                    cst.Arg(arg.value),
                ],
            )
            return arg.with_changes(value=call)

        return training_calls.with_data_wrapped(updated, wrapped, wrap)


AUDIT = [
    (
        "model.fit/evaluate/predict(<project generator or Sequence yielding dicts>)",
        f"model.fit({_TARGET}(model, data))",
        "Keras 2 read dict batches by input/output name and ignored other keys",
        _MODERN,
    ),
]
