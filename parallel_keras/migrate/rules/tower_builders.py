# SPDX-License-Identifier: Apache-2.0
"""Rewrite: a project's own multi-GPU function or class -> multi_gpu_model.

`make_parallel(model, gpu_count)`, `ParallelModel(keras_model, gpu_count)`
and the other names projects gave their own tower code (`towers.py` says how
they are recognised: one tower per GPU under `tf.device`, slices in,
concatenation out) do what Keras 2's `multi_gpu_model` does. Keras 3 runs
none of it on several GPUs: the towers' `tf.device` scopes are lost when the
model runs. Their callers get `parallel_keras.multi_gpu_model(model,
gpus=...)`, with the argument the project's function counted its towers by;
the definition stays (unused), and its device scopes are not rewritten
(`devices.py`). An import of the builder that only served those calls goes.
"""

from __future__ import annotations

import ast

import libcst as cst

from parallel_keras.migrate import context, syntax, towers

RULE = "multi-GPU code"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "a project's function or class building one tower per GPU "
        "(make_parallel, ParallelModel, ...) called as f(model, gpus)",
        "parallel_keras.multi_gpu_model(model, gpus=...)",
        "it is Keras 2's multi_gpu_model under another name; Keras 3 drops its "
        "tf.device towers when the model runs",
    ),
    (
        "the same, called with an argument multi_gpu_model has no meaning for",
        None,
        "call parallel_keras.multi_gpu_model(model, gpus=...) and carry that "
        "argument's meaning over by hand",
    ),
]

_REASON = (
    "it builds one tower per GPU under tf.device, slices the batch and "
    "concatenates the outputs, which is Keras 2's multi_gpu_model; Keras 3 "
    "drops those tf.device towers when the model runs"
)


def _matches(known: str, module: str) -> bool:
    return known == module or known.endswith("." + module) or module.endswith("." + known)


def _plan(
    builder: towers.TowerBuilder, positional: int, keywords: list[str | None], same_file: bool
) -> str | None:
    """Why a call cannot become multi_gpu_model, or None when it can."""
    if positional > len(builder.parameters):
        return "more positional arguments than the function takes"
    given = set(builder.parameters[:positional]) | {k for k in keywords if k}
    extra = sorted(given - {builder.model, builder.gpus} - set(builder.placement))
    if extra:
        return f"argument(s) {', '.join(extra)} that multi_gpu_model has no meaning for"
    if builder.model not in given:
        return "no model argument"
    if builder.gpus is not None and builder.gpus not in given:
        if builder.gpus_default is None or not (same_file or _is_literal(builder.gpus_default)):
            return "the GPU count comes from a default value of another module"
    if builder.gpus is None and not same_file:
        return f"the GPU count is `{builder.gpus_name}` of another module"
    return None


def _is_literal(source: str) -> bool:
    try:
        ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return False
    return True


def _called(node: ast.AST) -> str | None:
    """`f` of `f(...)`, `Class.create` of `Class.create(...)`."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return None


class TowerBuilderRule(context.Rule):
    """`make_parallel(model, 2)` -> `parallel_keras.multi_gpu_model(model, gpus=2)`."""

    name = RULE

    def __init__(self):
        # Local name -> (builder, defined in this file).
        self._builders: dict[str, tuple[towers.TowerBuilder, bool]] = {}
        # Imported names whose every use is a call that gets rewritten.
        self._removable: set[str] = set()

    def visit_Module(self, ctx, node):
        try:
            tree = ast.parse(node.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for name, builder in towers.find_tower_builders(tree).items():
            if name != "multi_gpu_model":  # MultiGpuModelRule rewires that one.
                self._builders[name] = (builder, True)
        imported = set()
        if ctx.project is not None:
            for statement in ast.walk(tree):
                if not isinstance(statement, ast.ImportFrom) or statement.module is None:
                    continue
                for known, builders in ctx.project.tower_builders.items():
                    if not _matches(known, statement.module):
                        continue
                    for alias in statement.names:
                        local = alias.asname or alias.name
                        for key, builder in builders.items():
                            # `Class.create` comes with `from m import Class`.
                            head, dot, method = key.partition(".")
                            if head != alias.name or key == "multi_gpu_model":
                                continue
                            self._builders[local + dot + method] = (builder, False)
                            imported.add(local)
        uses: dict[str, int] = {}
        rewritten: dict[str, int] = {}
        for child in ast.walk(tree):
            if isinstance(child, ast.Name) and child.id in imported:
                uses[child.id] = uses.get(child.id, 0) + 1
            called = _called(child)
            if (
                isinstance(child, ast.Call)
                and called is not None
                and called in self._builders
                and called.split(".")[0] in imported
            ):
                builder, same_file = self._builders[called]
                starred = any(isinstance(a, ast.Starred) for a in child.args)
                keywords = [keyword.arg for keyword in child.keywords]
                if (
                    not starred
                    and None not in keywords
                    and _plan(builder, len(child.args), keywords, same_file) is None
                ):
                    head = called.split(".")[0]
                    rewritten[head] = rewritten.get(head, 0) + 1
        self._removable = {name for name in imported if uses.get(name) == rewritten.get(name)}

    def leave_Call(self, ctx, original, updated):
        called = (
            syntax.dotted(original.func)
            if isinstance(original.func, (cst.Name, cst.Attribute))
            else None
        )
        if called is None or called not in self._builders:
            return updated
        builder, same_file = self._builders[called]
        positional = syntax.positional(original)
        keywords = [arg.keyword.value if arg.keyword else None for arg in original.args]
        keywords = [keyword for keyword in keywords if keyword is not None]
        problem = (
            "*args or **kwargs"
            if syntax.has_star(original)
            else _plan(builder, len(positional), keywords, same_file)
        )
        if problem is not None:
            ctx.flag(
                original,
                RULE,
                f"`{called}` is this project's own multi-GPU code ({_REASON}), "
                f"called with {problem}",
                f"call `parallel_keras.multi_gpu_model({builder.model}, gpus=...)` instead "
                f"of `{called}(...)`, with the number of GPUs (or their list) its "
                "towers were built for.",
            )
            return updated
        values: dict[str, cst.BaseExpression] = {}
        for index, arg in enumerate(updated.args):
            name = arg.keyword.value if arg.keyword else builder.parameters[index]
            values[name] = arg.value
        if builder.gpus is None:
            gpus: cst.BaseExpression = cst.Name(builder.gpus_name or "")
        elif builder.gpus in values:
            gpus = values[builder.gpus]
        else:
            gpus = syntax.expression(builder.gpus_default or "None")
        ctx.require_import("parallel_keras")
        placed = [name for name in builder.placement if name in values]
        dropped = (
            f"; {', '.join(placed)} dropped: it only placed the slices and the "
            "concatenation (tf.device), which changes no value and which "
            "multi_gpu_model does itself"
            if placed
            else ""
        )
        ctx.change(
            original,
            RULE,
            f"`{called}(...)` -> `parallel_keras.multi_gpu_model(..., gpus=...)`: "
            f"`{called}` is the project's own multi-GPU code: {_REASON}{dropped}",
        )
        return updated.with_changes(
            func=syntax.expression("parallel_keras.multi_gpu_model"),
            args=[cst.Arg(value=values[builder.model]), syntax.make_arg("gpus", gpus)],
        )

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        statement = updated.body[0]
        if isinstance(statement.names, cst.ImportStar):
            return updated
        dropped = [
            alias for alias in statement.names if alias.evaluated_alias in self._removable
        ] + [
            alias
            for alias in statement.names
            if alias.asname is None and syntax.dotted(alias.name) in self._removable
        ]
        if not dropped:
            return updated
        names = ", ".join(syntax.dotted(alias.name) for alias in dropped)
        module = "." * len(statement.relative)
        if statement.module is not None:
            module += syntax.dotted(statement.module)
        ctx.change(
            original,
            RULE,
            f"`from {module} import {names}` removed: its calls now go to "
            "parallel_keras.multi_gpu_model",
        )
        kept = [alias for alias in statement.names if alias not in dropped]
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=[statement.with_changes(names=kept)])
