# SPDX-License-Identifier: Apache-2.0
"""Rewrite: data generators that Keras 3's `fit` reads differently.

* A `keras.utils.Sequence` subclass is a `keras.utils.PyDataset` in Keras 3,
  which reads `workers`, `use_multiprocessing` and `max_queue_size` from its
  own constructor and needs `super().__init__()` to have been called. An
  `__init__` that does not call it gets the call, with the loader options
  the script passed to `fit_generator` for that class (they move from the
  call to the class; literal values only).
* A generator (or `Sequence.__getitem__`) that returns `[x1, x2], y` gives
  Keras 3's `fit` a list-structured batch, which it rejects
  (tensorflow/tensorflow#75329): the lists inside the returned tuple become
  tuples, which Keras reads as the same inputs in the same order. A name the
  function bound to a list (`inputs = [a, b]`, `batch = []`) is returned as
  `tuple(inputs)`.
"""

from __future__ import annotations

from typing import cast

import libcst as cst
from libcst import matchers as m
from libcst.helpers import ensure_type

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import training_api

RULE = "generators"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "class S(Sequence) without super().__init__()",
        "super().__init__(<loader options>)",
        "a Keras 3 Sequence is a PyDataset, which needs it",
    ),
    (
        "yield [x1, x2], y (generators feeding fit, also in other files of the folder)",
        "yield (x1, x2), y",
        "Keras 3's fit rejects list-structured batches",
    ),
    (
        "fit_generator(sequence, steps_per_epoch=N)",
        "fit(parallel_keras.repeat_sequence(sequence, N), steps_per_epoch=N)",
        "Keras 2 cycled a Sequence for N steps; Keras 3 stops at its end",
    ),
    (
        "fit_generator(sequence, steps_per_epoch=<call>)",
        None,
        "compute the steps once and pass parallel_keras.repeat_sequence(sequence, steps)",
    ),
]

_SEQUENCE_BASES = frozenset({"keras.utils.Sequence"})
_FIT_METHODS = frozenset(training_api.LEGACY_SIGNATURES) | {"fit", "evaluate", "predict"}


def _literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None")
    )


def _super_init(body) -> bool:
    for call in syntax.findall(body, cst.Call, m.Call(func=m.Attribute(attr=m.Name("__init__")))):
        owner = cast(cst.Attribute, call.func).value  # The matcher's: `<owner>.__init__`.
        if isinstance(owner, cst.Call) and syntax.dotted(owner.func) == "super":
            return True
        if syntax.dotted(owner) in ("Sequence", "keras.utils.Sequence", "PyDataset"):
            return True
    return False


class GeneratorRule(context.Rule):
    """Adds `super().__init__(...)` to Sequences; list batches -> tuple batches."""

    name = RULE
    writes = {"loader_options_moved": context.Phase.SCAN}

    def __init__(self):
        self._sequences: set[str] = set()
        self._instances: dict[str, str] = {}  # variable -> Sequence class
        self._options: dict[str, dict[str, cst.Arg]] = {}  # class -> loader options
        self._generator_functions: set[str] = set()

    # -- Scan -----------------------------------------------------------------

    def visit_ClassDef(self, ctx, node):
        project = _project_sequences(ctx)
        for base in node.bases:
            if (
                ctx.qualified_name(base.value) in _SEQUENCE_BASES
                or (syntax.dotted(base.value) or "").split(".")[-1] in project
            ):
                self._sequences.add(node.name.value)

    def visit_Assign(self, ctx, node):
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._instances[target.target.value] = value.func.value

    def _sequence_of(self, value, ctx=None) -> str | None:
        if isinstance(value, cst.Name):
            name = self._instances.get(value.value)
        elif isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)):
            name = (syntax.dotted(value.func) or "").split(".")[-1]
        else:
            return None
        known = self._sequences | (_project_sequences(ctx) if ctx is not None else set())
        return name if name in known else None

    def visit_Call(self, ctx, node):
        method = syntax.method_name(node)
        if method not in _FIT_METHODS:
            return
        data = syntax.keyword(node, "generator") or syntax.keyword(node, "x")
        positional = syntax.positional(node)
        value = data.value if data is not None else (positional[0].value if positional else None)
        if value is None:
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            self._generator_functions.add(value.func.value)
        sequence = self._sequence_of(value)
        if sequence is None:
            return
        options = {
            name: arg
            for name in training_api.LOADER_ARGUMENTS
            if (arg := syntax.keyword(node, name)) is not None
        }
        if options and all(_literal(arg.value) for arg in options.values()):
            self._options.setdefault(sequence, options)
            ctx.facts.loader_options_moved.add(id(node))

    # -- Rewrite --------------------------------------------------------------

    def leave_Call(self, ctx, original, updated):
        """`fit_generator(seq, steps_per_epoch=N)`: still N steps per epoch."""
        method = syntax.method_name(original)
        if method not in _CYCLED or syntax.has_star(updated):
            return updated
        args = list(updated.args)
        for data_keyword, steps_keyword in _CYCLED[method]:
            data = syntax.keyword(updated, data_keyword)
            if data is None and data_keyword == "x":
                positional = syntax.positional(updated)
                data = positional[0] if positional else None
            steps = syntax.keyword(updated, steps_keyword)
            if data is None or steps is None or syntax.code(steps.value) == "None":
                continue
            if self._sequence_of(data.value, ctx) is None:
                continue
            if not _repeatable(steps.value):
                ctx.flag(
                    original,
                    RULE,
                    f"`{syntax.code(data.value)}` is a Sequence read for "
                    f"{steps_keyword}={syntax.code(steps.value)} steps; Keras 3 reads it "
                    "only once per epoch (Keras 2 cycled it)",
                    f"compute the steps once (`steps = ...`) and pass "
                    f"`parallel_keras.repeat_sequence({syntax.code(data.value)}, steps)` "
                    f"with {steps_keyword}=steps.",
                )
                continue
            ctx.require_import("parallel_keras")
            wrapped = syntax.expression(
                f"parallel_keras.repeat_sequence({syntax.code(data.value)}, "
                f"{syntax.code(steps.value)})"
            )
            args = [arg.with_changes(value=wrapped) if arg is data else arg for arg in args]
            ctx.change(
                original,
                RULE,
                f"`{syntax.code(data.value)}` -> `parallel_keras.repeat_sequence(...)`: "
                f"Keras 2 cycled a Sequence for {steps_keyword}={syntax.code(steps.value)} "
                "steps whatever its length; Keras 3 stops at its end",
            )
        return updated.with_changes(args=args)

    def leave_ClassDef(self, ctx, original, updated):
        name = original.name.value
        if name not in self._sequences:
            return updated
        body = list(updated.body.body)
        for index, statement in enumerate(body):  # noqa: B007  (`index` is read after the loop)
            if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
                break
        else:
            return updated
        init = body[index]
        if _super_init(init.body):
            return updated
        options = self._options.get(name, {})
        arguments = ", ".join(
            f"{keyword}={syntax.code(arg.value)}" for keyword, arg in options.items()
        )
        call = cst.parse_statement(f"super().__init__({arguments})\n")
        statements = list(init.body.body)
        position = 1 if statements and _is_docstring(statements[0]) else 0
        statements.insert(position, call)
        body[index] = init.with_changes(body=init.body.with_changes(body=statements))
        message = (
            f"class {name}: added `super().__init__({arguments})` (a Keras 3 "
            "Sequence is a PyDataset, which needs it"
        )
        message += "; the loader options come from the fit_generator call)" if options else ")"
        ctx.change(original, RULE, message)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def leave_FunctionDef(self, ctx, original, updated):
        name = original.name.value
        project = ctx.project.fit_data_functions if ctx.project is not None else ()
        in_scope = (
            name in self._generator_functions
            or name in project
            or (name == "__getitem__" and self._sequences)
        )
        if not in_scope:
            return updated
        changed = []
        # Names the function binds to lists only: `inputs = [a, b]`, `batch = []`
        # (not `batch = np.array(batch)` later, which makes it one array).
        list_names: set[str] = set()
        other_names: set[str] = set()
        for assign in syntax.findall(original.body, cst.Assign):
            is_list = isinstance(assign.value, (cst.List, cst.ListComp))
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    (list_names if is_list else other_names).add(target.target.value)
        for augmented in syntax.findall(original.body, cst.AugAssign, m.AugAssign(target=m.Name())):
            other_names.add(cast(cst.Name, augmented.target).value)  # The matcher's: a name.
        list_names -= other_names

        def to_tuples(node):
            if not isinstance(node, cst.Tuple):
                return node
            elements = []
            for element in node.elements:
                value = element.value
                if isinstance(value, cst.Name) and value.value in list_names:
                    value = cst.Call(func=cst.Name("tuple"), args=[cst.Arg(value)])
                    changed.append(True)
                elif isinstance(value, cst.List):
                    value = cst.Tuple(
                        elements=value.elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
                    )
                    changed.append(True)
                elements.append(element.with_changes(value=value))
            return node.with_changes(elements=elements)

        new = _rewrite_batches(updated, to_tuples)
        if changed:
            ctx.change(
                original,
                RULE,
                f"`{name}` returns `[inputs...], targets` -> "
                "`(inputs...), targets`: Keras 3's fit rejects list-structured "
                "batches (tensorflow/tensorflow#75329); a tuple is the same inputs",
            )
            return new
        return updated


def _rewrite_batches(function: cst.FunctionDef, to_tuples) -> cst.FunctionDef:
    class _Batches(cst.CSTTransformer):
        def __init__(self):
            super().__init__()
            self._depth = 0

        def visit_FunctionDef(self, node):
            self._depth += 1
            return self._depth == 1

        def leave_FunctionDef(self, original_node, updated_node):
            self._depth -= 1
            return updated_node

        def leave_Yield(self, original_node, updated_node):
            return updated_node.with_changes(value=to_tuples(updated_node.value))

        def leave_Return(self, original_node, updated_node):
            return updated_node.with_changes(value=to_tuples(updated_node.value))

    # Its leave_FunctionDef returns the function: never removed or split.
    return ensure_type(function.visit(_Batches()), cst.FunctionDef)


# Legacy method -> (data argument, its step count) pairs Keras 2 cycled.
_CYCLED = {
    "fit_generator": (("x", "steps_per_epoch"), ("validation_data", "validation_steps")),
    "evaluate_generator": (("x", "steps"),),
    "predict_generator": (("x", "steps"),),
}


def _repeatable(node: cst.BaseExpression) -> bool:
    """Whether `node` may be written twice (a name, a constant, simple math)."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Attribute)):
        return True
    if isinstance(node, cst.BinaryOperation):
        return _repeatable(node.left) and _repeatable(node.right)
    if isinstance(node, cst.Call) and syntax.dotted(node.func) in _PURE_FUNCTIONS:
        return all(_repeatable(arg.value) for arg in node.args)
    return False


# Calls that compute the same number however often they run.
_PURE_FUNCTIONS = frozenset(
    {
        "len",
        "int",
        "round",
        "min",
        "max",
        "math.ceil",
        "math.floor",
        "np.ceil",
        "np.floor",
        "numpy.ceil",
        "numpy.floor",
    }
)


def _project_sequences(ctx) -> set[str]:
    return ctx.project.sequence_classes if ctx is not None and ctx.project is not None else set()


def _is_docstring(statement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
