# SPDX-License-Identifier: Apache-2.0
"""Rewrite: a project's subclass of a Keras 2 optimizer, built with Keras 2's arguments.

Keras 2 projects subclassed its optimizers, often through a mixin that
overrides Keras 2's graph hooks `get_updates` / `get_gradients`:

    class OptimizerMultiGPUMixin(object):
        def get_updates(self, loss, params):   # one gradient per GPU under
            ...                                # tf.device, averaged (NCCL)

    class RMSPropMGPU(OptimizerMultiGPUMixin, RMSprop): pass
    opt = RMSPropMGPU(lr=lr, decay=1e-6, gdev_list=gpus)

Keras 3 never calls `get_updates` or `get_gradients`, and its optimizer
classes reject `lr=` and ignore `decay=`; the calls of a project class are
not the Keras optimizer's to the optimizers rule. Two cases:

* The hooks average the gradients across devices (their class places work
  with `tf.device` or uses NCCL): under tf.distribute the gradients are
  all-reduced already, so the class trains as its Keras optimizer base, as
  Keras 2's synchronous multi-GPU optimizer did. The base becomes
  `parallel_keras.compat.keras2_optimizer(RMSprop)`, which takes Keras 2's
  arguments with Keras 2's meaning (`decay=` as `InverseTimeDecay`); the
  hooks stay, never called (a compatibility path).
* Hooks that compute something else (a Keras 2 AdamW, gradient
  accumulation) would silently train as the base: flagged, with the fix
  (port them to `update_step`).

A subclass without those hooks also gets the Keras 2 base (its callers pass
Keras 2's arguments). The hooks are looked for in the class and in the
classes of its file it derives from.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import optimizers

RULE = "optimizer subclasses"
_TARGET = "parallel_keras.compat.keras2_optimizer"
_HOOKS = frozenset({"get_updates", "get_gradients"})
_MODERN = (
    "subclass the keras.optimizers class and build it with Keras 3's arguments; "
    "tf.distribute averages the gradients across replicas"
)
_PORT = (
    "Keras 3 never calls get_updates/get_gradients (Keras 2's graph hooks), so this class "
    "would train as its base optimizer: port the update to "
    "`update_step(self, gradient, variable, learning_rate)` of a keras.optimizers.Optimizer "
    "subclass (build(var_list) for the slots)."
)
AUDIT = [
    (
        "class C(<mixin averaging gradients across GPUs>, keras.optimizers.X)",
        f"class C(<mixin>, {_TARGET}(X))",
        "Keras 3 never calls the mixin's get_updates/get_gradients; tf.distribute "
        "all-reduces the gradients as the mixin did; Keras 2's arguments (lr=, decay=) keep "
        "their meaning",
        _MODERN,
    ),
    (
        "class C(keras.optimizers.X) built with Keras 2's arguments (lr=, decay=)",
        f"class C({_TARGET}(X))",
        "Keras 2's arguments with Keras 2's meaning",
        _MODERN,
    ),
    (
        "class C(keras.optimizers.X) overriding get_updates/get_gradients otherwise",
        None,
        _PORT,
    ),
]


def _averages_across_devices(ctx: context.Context, node: cst.ClassDef) -> bool:
    """Whether the class places work on devices (`tf.device`) or uses NCCL."""
    found: list[cst.CSTNode] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if (ctx.qualified_name(call.func) or "").endswith("tensorflow.device") or (
                syntax.code(call.func) == "tf.device"
            ):
                found.append(call)

        def visit_Name(self, name: cst.Name) -> None:
            if "nccl" in name.value.lower():
                found.append(name)

    node.visit(Finder())
    return bool(found)


def _hooks(node: cst.ClassDef) -> set[str]:
    return {
        statement.name.value
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value in _HOOKS
    }


class OptimizerSubclassRule(context.Rule):
    """`class C(Mixin, RMSprop)` -> `class C(Mixin, parallel_keras.compat.keras2_optimizer(RMSprop))`."""

    name = RULE

    def __init__(self):
        self._classes: dict[str, cst.ClassDef] = {}  # The file's classes by name.

    def visit_ClassDef(self, ctx, node):
        self._classes.setdefault(node.name.value, node)

    def _optimizer_base(self, ctx, base: cst.Arg) -> str | None:
        if base.keyword is not None:
            return None
        qualified = ctx.qualified_name(base.value) or ""
        module, _, name = qualified.rpartition(".")
        if module in ("keras.optimizers", "keras.optimizers.legacy") and name in (
            optimizers.LEGACY_SIGNATURES
        ):
            return name
        return None

    def _related(self, node: cst.ClassDef, seen: set[str]) -> list[cst.ClassDef]:
        """The class and the classes of this file it derives from."""
        related = [node]
        for base in node.bases:
            name = syntax.code(base.value)
            if name in self._classes and name not in seen:
                seen.add(name)
                related.extend(self._related(self._classes[name], seen))
        return related

    def leave_ClassDef(self, ctx, original, updated):
        index = next(
            (i for i, base in enumerate(original.bases) if self._optimizer_base(ctx, base)), None
        )
        if index is None:
            return updated
        base_name = syntax.code(original.bases[index].value)
        related = self._related(original, {original.name.value})
        with_hooks = [cls for cls in related if _hooks(cls)]
        if with_hooks and not any(_averages_across_devices(ctx, cls) for cls in with_hooks):
            hooks = sorted(set().union(*(_hooks(cls) for cls in with_hooks)))
            ctx.flag(
                original,
                RULE,
                f"`{original.name.value}` overrides {', '.join(hooks)} of Keras 2's optimizer",
                _PORT,
            )
            return updated
        ctx.require_import("parallel_keras")
        why = (
            "its get_updates/get_gradients average the gradients across GPUs, which Keras 3 "
            "never calls and tf.distribute already does; "
            if with_hooks
            else ""
        )
        ctx.compat(
            original,
            RULE,
            f"`{original.name.value}({base_name})` -> `{_TARGET}({base_name})`: {why}its "
            "calls pass Keras 2's arguments (lr=, decay=), kept with Keras 2's meaning",
            _MODERN,
        )
        bases = list(updated.bases)
        bases[index] = bases[index].with_changes(
            value=cst.Call(func=syntax.expression(_TARGET), args=[cst.Arg(bases[index].value)])
        )
        rewritten = updated.with_changes(bases=bases)
        header = f"class {original.name.value}({', '.join(syntax.code(b) for b in bases)}):"
        if len(header) <= _LINE:
            return rewritten
        # The bases on their own line, as black writes a long class header.
        return rewritten.with_changes(
            lpar=cst.LeftParen(whitespace_after=_new_line("    ")),
            rpar=cst.RightParen(whitespace_before=_new_line("")),
        )


# A rewritten class header longer than PEP 8's line gets its bases on their own line.
_LINE = 79


def _new_line(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=True,
        last_line=cst.SimpleWhitespace(indent),
    )
