# SPDX-License-Identifier: Apache-2.0
"""Rewrite: every import and use of `multi_gpu_model` goes to parallel_keras.

Keras 2 shipped `multi_gpu_model` in `keras.utils` (re-exported from
`keras.utils.training_utils` in 2.0-2.1 and `keras.utils.multi_gpu_utils`
later, and as `tf.keras.utils.multi_gpu_model` until TF 2.4). TensorFlow's
`tf_upgrade_v2` never rewrote it. `parallel_keras.multi_gpu_model` has the
same signature, so only the name's origin changes.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "multi_gpu_model"

# Canonical modules (see syntax.canonical_name) that held multi_gpu_model.
LEGACY_MODULES = frozenset(
    {"keras.utils", "keras.utils.training_utils", "keras.utils.multi_gpu_utils"}
)
_SUBMODULES = frozenset(LEGACY_MODULES - {"keras.utils"})
LEGACY_NAMES = frozenset(f"{module}.multi_gpu_model" for module in LEGACY_MODULES)
_REASON = (
    "Keras 3 has no multi_gpu_model; parallel_keras.multi_gpu_model is the "
    "same function on tf.distribute"
)

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple[str, str | None, str]] = [
    (
        "keras.utils.multi_gpu_model (and training_utils/multi_gpu_utils)",
        "parallel_keras.multi_gpu_model",
        _REASON,
    ),
    (
        "multi_gpu_model from the project's own module (migrated with the folder)",
        "parallel_keras.multi_gpu_model",
        "a vendored copy of Keras 2's tf.device towers",
    ),
    (
        "multi_gpu_model from a module not migrated with the file",
        None,
        "if it is a copy of Keras 2's, import parallel_keras's instead",
    ),
]


_KERAS2_KEYWORDS = frozenset({"model", "gpus", "cpu_merge", "cpu_relocation"})


def _vendored_module(ctx: context.Context, module: str) -> bool | None:
    """Whether `module` (as imported) is the project's own multi_gpu_model copy.

    None when the project is unknown (the file was migrated on its own).
    """
    if ctx.project is None:
        return None
    return any(
        known == module or known.endswith("." + module) or module.endswith("." + known)
        for known in ctx.project.multi_gpu_model_modules
    )


class MultiGpuModelRule(context.Rule):
    """`from keras.utils import multi_gpu_model` -> `from parallel_keras ...`.

    A project's own copy of Keras 2's `multi_gpu_model` (a vendored
    `utils/multi_gpu.py`, or a `def multi_gpu_model(` in the script) is
    recognised too: its callers get parallel_keras's.
    """

    name = RULE
    writes = {"multi_gpu_names": context.Phase.SCAN}

    def __init__(self):
        self._local_definition = False
        self._rewired: set[str] = set()  # Local names now bound to parallel_keras's.

    def visit_Module(self, ctx, node):
        self._local_definition = any(
            isinstance(statement, cst.FunctionDef) and statement.name.value == "multi_gpu_model"
            for statement in node.body
        )
        if self._local_definition:
            self._rewired.add("multi_gpu_model")

    def visit_ImportAlias(self, ctx, node):
        # Aliases (`import multi_gpu_model as mgm`) let other rules recognize
        # calls by their local name.
        if syntax.dotted(node.name) == "multi_gpu_model" and node.asname is not None:
            names = ctx.facts.multi_gpu_names
            names.add(node.asname.name.value)

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(updated.body) != 1:
            return updated
        statement = updated.body[0]
        if isinstance(statement, cst.ImportFrom):
            return self._import_from(ctx, original, updated, statement)
        if isinstance(statement, cst.Import):
            return self._import(ctx, original, updated, statement)
        return updated

    def _import_from(self, ctx, original, updated, statement):
        if statement.module is None or isinstance(statement.names, cst.ImportStar):
            return updated
        module = syntax.canonical_name(syntax.dotted(statement.module))
        moved = [a for a in statement.names if syntax.dotted(a.name) == "multi_gpu_model"]
        if not moved:
            return updated
        if statement.relative or module not in LEGACY_MODULES:
            return self._project_import(ctx, original, updated, statement, moved)
        kept = [a for a in statement.names if a not in moved]
        ctx.change(
            original,
            RULE,
            f"`from {syntax.dotted(statement.module)} import multi_gpu_model` -> "
            f"`from parallel_keras import multi_gpu_model`: {_REASON}",
        )
        return self._move(updated, statement, moved, kept)

    def _project_import(self, ctx, original, updated, statement, moved):
        module = syntax.dotted(statement.module) or ""
        if module.split(".")[0] in ("keras", "tensorflow", "tf_keras", "parallel_keras"):
            return updated
        vendored = _vendored_module(ctx, module)
        if not vendored:
            ctx.flag(
                original,
                RULE,
                f"multi_gpu_model comes from `{module}`, not from Keras"
                + ("" if vendored is None else " (not a module migrated with this file)"),
                f"if `{module}.multi_gpu_model` is a copy of Keras 2's (tf.device "
                "towers over slices of the batch), import parallel_keras's "
                "instead: `from parallel_keras import multi_gpu_model`; migrate the "
                "folder with that module to have it done.",
            )
            return updated
        for alias in moved:
            self._rewired.add(alias.asname.name.value if alias.asname else "multi_gpu_model")
        kept = [a for a in statement.names if a not in moved]
        ctx.change(
            original,
            RULE,
            f"`from {module} import multi_gpu_model` -> `from parallel_keras import "
            f"multi_gpu_model`: `{module}` is the project's copy of Keras 2's "
            "multi_gpu_model (tf.device towers, which Keras 3 does not keep); "
            "parallel_keras's takes the same arguments",
        )
        return self._move(updated, statement, moved, kept)

    def _move(self, updated, statement, moved, kept):
        new_module = syntax.dotted_expression("parallel_keras")
        if not kept:
            return updated.with_changes(
                body=[statement.with_changes(module=new_module, relative=())]
            )
        last_comma = statement.names[-1].comma
        kept[-1] = kept[-1].with_changes(comma=last_comma)
        if statement.lpar is None:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        moved = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in moved]
        moved = [
            alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            for alias in moved[:-1]
        ] + moved[-1:]
        remaining = updated.with_changes(body=[statement.with_changes(names=kept)])
        added = cst.SimpleStatementLine(body=[cst.ImportFrom(module=new_module, names=moved)])
        return cst.FlattenSentinel([remaining, added])

    def _import(self, ctx, original, updated, statement):
        # `import keras.utils.training_utils [as tu]`: the module is gone in
        # Keras 3. With an alias, `import parallel_keras as tu` keeps
        # `tu.multi_gpu_model` working; without one the statement only has
        # to keep binding its root package (uses are rewritten below).
        names = list(statement.names)
        touched = False
        for index, alias in enumerate(names):
            full = syntax.dotted(alias.name)
            if syntax.canonical_name(full) not in _SUBMODULES:
                continue
            touched = True
            if alias.asname is not None:
                new_name = syntax.expression("parallel_keras")
            else:
                new_name = cst.Name(full.split(".")[0])
            names[index] = alias.with_changes(name=new_name)
            ctx.change(
                original,
                RULE,
                f"`import {full}` -> `import {syntax.dotted(new_name)}`: the "
                "module does not exist in Keras 3",
            )
        if not touched:
            return updated
        return updated.with_changes(body=[statement.with_changes(names=names)])

    def leave_Call(self, ctx, original, updated):
        if not (isinstance(original.func, cst.Name) and original.func.value in self._rewired):
            return updated
        unknown = [
            arg.keyword.value
            for arg in original.args
            if arg.keyword is not None and arg.keyword.value not in _KERAS2_KEYWORDS
        ]
        if unknown or syntax.has_star(original) or len(original.args) > 4:
            ctx.flag(
                original,
                RULE,
                f"the project's own multi_gpu_model is called with arguments Keras 2's "
                f"did not have ({', '.join(unknown) or 'more than 4, or *args'})",
                "call parallel_keras.multi_gpu_model(model, gpus, cpu_merge, "
                "cpu_relocation) with the meaning of those arguments.",
            )
        if not self._local_definition:
            return updated
        ctx.require_import("parallel_keras")
        ctx.change(
            original,
            RULE,
            "`multi_gpu_model(...)` (defined in this file, a copy of Keras 2's) -> "
            f"`parallel_keras.multi_gpu_model(...)`: {_REASON}",
        )
        return updated.with_changes(func=syntax.expression("parallel_keras.multi_gpu_model"))

    def leave_Attribute(self, ctx, original, updated):
        if ctx.qualified_name(original) not in LEGACY_NAMES:
            return updated
        ctx.require_import("parallel_keras")
        ctx.change(
            original,
            RULE,
            f"`{syntax.dotted(original)}` -> `parallel_keras.multi_gpu_model`: {_REASON}",
        )
        return syntax.expression("parallel_keras.multi_gpu_model")
