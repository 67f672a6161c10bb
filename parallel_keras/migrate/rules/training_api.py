# SPDX-License-Identifier: Apache-2.0
"""Rewrite: the `*_generator` training methods that Keras 3 removed.

`fit_generator`, `evaluate_generator` and `predict_generator` became `fit`,
`evaluate` and `predict`, which take generators and `keras.utils.Sequence`
objects directly. Their positional order differs (`fit_generator(gen,
steps_per_epoch, epochs)` vs `fit(x, y, batch_size)`), so positional
arguments are passed by keyword. `workers`, `use_multiprocessing` and
`max_queue_size` moved to `keras.utils.PyDataset`'s constructor: they are
dropped, and flagged when they asked for parallel loading.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras import _keras2_signatures
from parallel_keras.migrate import context, syntax

RULE = "generator methods"

# Keras 2.2-2.3 signatures (keras/engine/training.py), shared with
# parallel_keras.compat, which binds the calls it cannot rewrite.
LEGACY_SIGNATURES = _keras2_signatures.GENERATOR_METHODS
LOADER_ARGUMENTS = ("max_queue_size", "workers", "use_multiprocessing")
# Methods whose Keras 2 class_weight= ignored anything but a dict.
_CLASS_WEIGHT_METHODS = frozenset({"fit", "fit_generator", "train_on_batch"})
_REMOVED_PREDICTORS = {
    "predict_classes": "np.argmax(model.predict(x), axis=-1) for softmax outputs, "
    "or (model.predict(x) > 0.5).astype('int32') for a sigmoid output",
    "predict_proba": "model.predict(x)",
}


_STEP_METHODS = frozenset(
    {"fit", "evaluate", "predict", "fit_generator", "evaluate_generator", "predict_generator"}
)
_STEP_ARGUMENTS = ("steps_per_epoch", "validation_steps", "steps")


def _whole_steps(ctx, original, updated, method):
    """`steps_per_epoch=n / batch` -> `math.ceil(n / batch)`.

    Keras 2's loops counted `while steps_done < steps_per_epoch`, so a float
    ran ceil(steps) steps; Keras 3 passes it to `range` (TypeError). Only a
    true division is rewritten: it is a float whatever its operands are.
    """
    if method not in _STEP_METHODS:
        return updated
    for name in _STEP_ARGUMENTS:
        arg = syntax.keyword(updated, name)
        if arg is None or not (
            isinstance(arg.value, cst.BinaryOperation)
            and isinstance(arg.value.operator, cst.Divide)
        ):
            continue
        ctx.require_import("math")
        ctx.change(
            original,
            RULE,
            f"`{name}={syntax.code(arg.value)}` -> `math.ceil(...)`: Keras 2 ran a float "
            "number of steps rounded up; Keras 3 takes only an int",
        )
        wrapped = cst.Call(syntax.expression("math.ceil"), args=[cst.Arg(arg.value)])
        updated = updated.with_changes(
            args=[a.with_changes(value=wrapped) if a is arg else a for a in updated.args]
        )
    return updated


class GeneratorMethodsRule(context.Rule):
    """`model.fit_generator(gen, 10, 2)` -> `model.fit(gen, steps_per_epoch=10, epochs=2)`."""

    name = RULE
    reads = {"loader_options_moved": context.Phase.REWRITE}

    def __init__(self):
        # Names bound to an instance of a project wrapper class -> its class.
        self._wrappers: dict[str, str] = {}

    def visit_Assign(self, ctx, node):
        project = getattr(ctx, "project", None)
        classes = getattr(project, "wrapper_fit_methods", None) or {}
        if isinstance(node.value, cst.Call) and isinstance(
            node.value.func, (cst.Name, cst.Attribute)
        ):
            called = syntax.dotted(node.value.func).rpartition(".")[2]
            if called in classes:
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        self._wrappers[target.target.value] = called

    def _wrapper_method(self, ctx, call) -> bool:
        """Whether `call` is `x.fit_generator(...)` with `x` a project wrapper's instance."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return False
        owner = self._wrappers.get(func.value.value)
        classes = getattr(getattr(ctx, "project", None), "wrapper_fit_methods", None) or {}
        return owner is not None and func.attr.value in classes.get(owner, ())

    def leave_Call(self, ctx, original, updated):
        method = syntax.method_name(updated)
        if self._wrapper_method(ctx, original):
            return updated  # The project's own method (it calls Keras's inside).
        called = ctx.qualified_name(original.func) or syntax.dotted(original.func) or ""
        if called.startswith("parallel_keras."):
            return updated  # An earlier run's `parallel_keras.compat.fit_generator(m, ...)`.
        if method in _REMOVED_PREDICTORS:
            ctx.flag(
                original,
                RULE,
                f"`{method}` was removed in TF 2.6",
                f"use {_REMOVED_PREDICTORS[method]}.",
            )
            return updated
        if method in _CLASS_WEIGHT_METHODS:
            updated = _drop_string_class_weight(ctx, original, updated, method)
        if method in LEGACY_SIGNATURES and syntax.has_star(updated):
            return _through_compat(ctx, original, updated, method)
        if method not in LEGACY_SIGNATURES:
            return _whole_steps(ctx, original, updated, method)
        new_method = method[: -len("_generator")]
        updated, named = syntax.keywordize(updated, LEGACY_SIGNATURES[method])
        updated = _whole_steps(ctx, original, updated, method)
        generator = syntax.keyword(updated, "generator")
        if generator is not None:
            updated = updated.with_changes(
                args=[
                    arg.with_changes(keyword=cst.Name("x")) if arg is generator else arg
                    for arg in updated.args
                ]
            )
        dropped = {
            name: arg
            for name in LOADER_ARGUMENTS
            if (arg := syntax.keyword(updated, name)) is not None
        }
        parallel_loading = _asks_parallel_loading(dropped)
        if dropped:
            updated = syntax.remove_args(updated, list(dropped.values()))
        message = f"`{method}` -> `{new_method}` (Keras 3 removed {method})"
        if named:
            message += f"; passed {', '.join(named)} by keyword"
        if dropped:
            message += f"; removed {', '.join(dropped)} (now arguments of keras.utils.PyDataset)"
        updated = _keep_continuation_indent(updated, len(method) - len(new_method))
        ctx.change(original, RULE, message)
        if parallel_loading and id(original) not in ctx.facts.loader_options_moved:
            _flag_parallel_loading(ctx, original, updated, dropped)
        return updated.with_changes(func=updated.func.with_changes(attr=cst.Name(new_method)))


def _through_compat(
    ctx: context.Context, original: cst.Call, updated: cst.Call, method: str
) -> cst.BaseExpression:
    """`m.fit_generator(gen, *args, **kw)` -> `parallel_keras.compat.fit_generator(m, gen, ...)`.

    Star arguments hide which positional argument is which, so the call is
    bound to Keras 2's signature when it runs (a project's wrapper forwarding
    its own arguments is the usual case).
    """
    new = method[: -len("_generator")]
    func = updated.func
    if not isinstance(func, cst.Attribute):
        ctx.flag(
            original,
            RULE,
            f"`{method}` with `*`/`**` arguments: Keras 3 removed it, and `{new}`'s "
            "positional order differs (its second parameter is `y`)",
            f"call `{new}(generator, ...)` with every argument by keyword (and without "
            "max_queue_size=/workers=/use_multiprocessing=, which Keras 3's fit refuses).",
        )
        return updated
    target = f"parallel_keras.compat.{method}"
    receiver = cst.Arg(func.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    ctx.require_import("parallel_keras")
    ctx.compat(
        original,
        RULE,
        f"`{syntax.code(func)}(...)` with `*`/`**` arguments -> `{target}("
        f"{syntax.code(func.value)}, ...)`: Keras 3 removed `{method}`, and the star "
        "arguments follow its Keras 2 positional order, bound when the call runs",
        f"call `{syntax.code(func.value)}.{new}(generator, ...)` with every argument by "
        "keyword (no max_queue_size=/workers=/use_multiprocessing=).",
    )
    return updated.with_changes(func=syntax.expression(target), args=[receiver, *updated.args])


def _asks_parallel_loading(dropped: dict[str, cst.Arg]) -> bool:
    """`workers=` above 1 (or not a literal) or `use_multiprocessing=` not False."""
    workers = dropped.get("workers")
    processes = dropped.get("use_multiprocessing")
    return (
        workers is not None
        and not (isinstance(workers.value, cst.Integer) and int(workers.value.value) <= 1)
    ) or (processes is not None and not syntax.is_literal_false(processes.value))


def _flag_parallel_loading(
    ctx: context.Context, original: cst.Call, updated: cst.Call, dropped: dict[str, cst.Arg]
) -> None:
    """Flags loader options removed from the call: they belong to the data's class now."""
    options = ", ".join(f"{name}={syntax.code(arg.value)}" for name, arg in dropped.items())
    # The data stays positional when it was (`fit_generator(gen, 10)`).
    data = syntax.keyword(updated, "x")
    positional = syntax.positional(updated)
    data_value = data.value if data else (positional[0].value if positional else None)
    data_text = syntax.code(data_value) if data_value is not None else "the generator"
    ctx.flag(
        original,
        RULE,
        f"`{data_text}` was read with several workers or processes",
        f"to keep parallel loading, make the class of `{data_text}` a "
        "keras.utils.PyDataset (or Sequence) subclass and call "
        f"super().__init__({options}) first in its __init__.",
    )


def _drop_string_class_weight(
    ctx: context.Context, original: cst.Call, updated: cst.Call, method: str
) -> cst.Call:
    """Removes `class_weight='auto'` (any str): Keras 1 and 2 weighted nothing for it.

    Keras 2's `standardize_weights` applied `class_weight` only when it was a
    dict (or, in Keras 1, a dict per output) and gave every sample weight 1
    otherwise, so `'auto'` (a Keras 0.x option) trained unweighted; Keras 3's
    fit calls `class_weight.get` and raises on a str.
    """
    arg = syntax.keyword(updated, "class_weight")
    if arg is None or syntax.string_value(arg.value) is None:
        return updated
    ctx.change(
        original,
        RULE,
        f"removed `class_weight={syntax.code(arg.value)}` from `{method}`: Keras 2 "
        "ignored a class_weight that was not a dict (no weighting); Keras 3 raises on it",
    )
    return syntax.remove_args(updated, [arg])


def _keep_continuation_indent(call: cst.Call, shift: int) -> cst.Call:
    """Dedents continuation lines aligned under `(` by the shorter method name."""

    def dedent(whitespace):
        if not isinstance(whitespace, cst.ParenthesizedWhitespace):
            return whitespace
        indent = whitespace.last_line.value
        if len(indent) <= shift or indent.strip():
            return whitespace
        return whitespace.with_changes(last_line=cst.SimpleWhitespace(indent[shift:]))

    args = []
    for arg in call.args:
        if isinstance(arg.comma, cst.Comma):
            arg = arg.with_changes(
                comma=arg.comma.with_changes(whitespace_after=dedent(arg.comma.whitespace_after))
            )
        args.append(arg)
    return call.with_changes(args=args, whitespace_before_args=dedent(call.whitespace_before_args))


AUDIT = [
    *(
        (
            f"model.{name}(...)",
            f"model.{name[: -len('_generator')]}(...)",
            "Keras 3 removed the *_generator methods; positional arguments by keyword",
        )
        for name in LEGACY_SIGNATURES
    ),
    *(
        (
            f"{name}(workers=, use_multiprocessing=, max_queue_size=)",
            "(removed)",
            "now arguments of keras.utils.PyDataset; flagged when they asked for parallel loading",
        )
        for name in ("fit_generator",)
    ),
    *((f"model.{name}(x)", None, f"use {fix}") for name, fix in _REMOVED_PREDICTORS.items()),
    (
        "model.fit(..., class_weight='auto')",
        "(removed)",
        "Keras 2 ignored a class_weight that was not a dict: no weighting",
    ),
]
