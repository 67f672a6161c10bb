# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2 optimizer arguments (`lr=`, `decay=`, positional order).

Keras 3 rejects `lr=` and ignores `decay=` with only a warning, so a script
that relied on Keras 2's time decay silently trains with a constant rate.
Keras 2 applied `lr / (1 + decay * iterations)`, which is exactly
`InverseTimeDecay(lr, decay_steps=1, decay_rate=decay)`. Keras 2 positional
arguments (`SGD(0.01, 0.9, 1e-6, True)` = lr, momentum, decay, nesterov) are
passed by keyword first, since Keras 3's order differs.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "optimizers"

# Keras 2.2-2.3 signatures (keras/optimizers.py) and default learning rates.
LEGACY_SIGNATURES = {
    "SGD": ("lr", "momentum", "decay", "nesterov"),
    "RMSprop": ("lr", "rho", "epsilon", "decay"),
    "Adagrad": ("lr", "epsilon", "decay"),
    "Adadelta": ("lr", "rho", "epsilon", "decay"),
    "Adam": ("lr", "beta_1", "beta_2", "epsilon", "decay", "amsgrad"),
    "Adamax": ("lr", "beta_1", "beta_2", "epsilon", "decay"),
    "Nadam": ("lr", "beta_1", "beta_2", "epsilon", "schedule_decay"),
}
LEGACY_DEFAULT_LR = {
    "SGD": "0.01",
    "RMSprop": "0.001",
    "Adagrad": "0.01",
    "Adadelta": "1.0",
    "Adam": "0.001",
    "Adamax": "0.002",
    "Nadam": "0.002",
}
# Keras 3's default learning rates (keras/src/optimizers/*.py, checked in
# 3.5 and 3.15; tf.keras 2.x's were the same). Where it differs from Keras
# 2.2-2.3's, a standalone Keras 2 script that relied on the default gets
# Keras 2's value written out: `Adadelta()` trained with lr=1.0, 1000 times
# Keras 3's.
KERAS3_DEFAULT_LR = {
    "SGD": "0.01",
    "RMSprop": "0.001",
    "Adagrad": "0.001",
    "Adadelta": "0.001",
    "Adam": "0.001",
    "Adamax": "0.001",
    "Nadam": "0.001",
}
LOWERCASE_ALIASES = {name.lower(): name for name in LEGACY_SIGNATURES}
# Where Keras 3's update formula differs from Keras 2.2-2.3's (checked
# against keras/optimizers.py 2.2.4 and keras/src/optimizers/*.py 3.15):
# standalone Keras 2 code builds these through compat.keras2_optimizer.
_KERAS2_OPTIMIZER = "parallel_keras.compat.keras2_optimizer"
KERAS2_FORMULAS = {
    "RMSprop": "Keras 2's RMSprop divided by sqrt(a) + epsilon, Keras 3's by sqrt(a + epsilon)",
    "Adagrad": (
        "Keras 2's Adagrad divided by sqrt(a) + epsilon from zero accumulators, Keras 3's "
        "by sqrt(a + epsilon) from 0.1"
    ),
    "Nadam": (
        "Keras 2's Nadam momentum schedule was 0.96 ** (t * schedule_decay), Keras 3's 0.96 ** t"
    ),
}
_NOT_MODEL_COMPILE = frozenset({"re.compile", "regex.compile"})
_SCHEDULES = frozenset({"keras.optimizers.schedules.InverseTimeDecay"})
_SETS_LR = frozenset({"keras.callbacks.ReduceLROnPlateau", "keras.callbacks.LearningRateScheduler"})


def _optimizer_class(ctx: context.Context, call: cst.Call) -> str | None:
    qualified = ctx.qualified_name(call.func) or ""
    module, _, name = qualified.rpartition(".")
    name = LOWERCASE_ALIASES.get(name, name)  # Keras 2's `rmsprop = RMSprop`
    if module in ("keras.optimizers", "keras.optimizers.legacy") and name in LEGACY_SIGNATURES:
        return name
    return None


def standalone_keras(ctx: context.Context, func: cst.BaseExpression) -> bool:
    """Whether `func` is standalone Keras 2's `keras.optimizers.X`.

    `tf.keras.optimizers.X` and `keras.optimizers.legacy.X` are TF 2's
    optimizers, whose default learning rates were already Keras 3's.
    """
    names = [name.name for name in ctx.qualified_names(func)]
    if not names:
        names = [syntax.fallback_name(func) or ""]
    return all(name.rpartition(".")[0] == "keras.optimizers" for name in names)


def _keras2_decay(ctx: context.Context, call: cst.Call, name: str) -> cst.Arg | None:
    """The non-zero `decay=` of a Keras 2 optimizer call (by keyword or position)."""
    legacy, _ = syntax.keywordize(call, LEGACY_SIGNATURES[name])
    decay = syntax.keyword(legacy, "decay")
    if decay is None or syntax.is_zero(decay.value):
        return None
    return decay


def _settable_decay(ctx: context.Context, call: cst.Call, name: str) -> bool:
    """Whether compat.keras2_optimizer builds this call with its own meaning.

    It takes Keras 2.2-2.3's defaults and formulas: right for standalone
    Keras 2; for tf.keras only where those agree with TF 2's (not RMSprop,
    Adagrad, Nadam; a default learning rate only where it is the same).
    """
    if standalone_keras(ctx, call.func):
        return True
    legacy, _ = syntax.keywordize(call, LEGACY_SIGNATURES[name])
    return name not in KERAS2_FORMULAS and (
        syntax.keyword(legacy, "lr") is not None
        or syntax.keyword(legacy, "learning_rate") is not None
        or LEGACY_DEFAULT_LR[name] == KERAS3_DEFAULT_LR[name]
    )


def _optimizer_rate(node: cst.BaseExpression) -> bool:
    """`<...>.optimizer.lr` or `<...>.optimizer.learning_rate`."""
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value in ("lr", "learning_rate")
        and isinstance(node.value, (cst.Attribute, cst.Name))
        and (syntax.dotted(node.value) or "").rpartition(".")[2] in ("optimizer", "opt")
    )


def _sets_learning_rate(ctx: context.Context, call: cst.Call) -> bool:
    """A call that sets an optimizer's rate while it trains.

    `ReduceLROnPlateau(...)`, `LearningRateScheduler(...)`,
    `K.set_value(model.optimizer.lr, x)` and what an earlier run made of it
    (`model.optimizer.learning_rate.assign(x)`).
    """
    name = ctx.qualified_name(call.func)
    if name in _SETS_LR:
        return True
    if name == "keras.backend.set_value" and call.args:
        return _optimizer_rate(call.args[0].value)
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "assign"
        and _optimizer_rate(func.value)
    )


def _string_optimizer(node: cst.BaseExpression) -> str | None:
    """`'adadelta'` -> `Adadelta`: a Keras 2 optimizer named by a string."""
    text = syntax.string_value(node)
    if text is None:
        return None
    return LOWERCASE_ALIASES.get(text.lower())


def _module_constant(ctx: context.Context, node: cst.BaseExpression) -> cst.BaseExpression:
    """The string a module-level constant (`OPTIMIZER = 'adadelta'`) holds, else `node`."""
    if not isinstance(node, cst.Name):
        return node
    literal = ctx.string_constants.get(node.value)
    # Only the module's own name: not a function's parameter or local of that name.
    names = {name.name for name in ctx.qualified_names(node)}
    if literal is None or names != {node.value}:
        return node
    return literal


def _string_differs(name: str | None) -> bool:
    """Whether Keras 3 reads the optimizer string `name` differently from Keras 2."""
    return name is not None and (
        LEGACY_DEFAULT_LR[name] != KERAS3_DEFAULT_LR[name] or name in KERAS2_FORMULAS
    )


AUDIT = [
    ("keras.optimizers.X(lr=)", "learning_rate=", "Keras 3 rejects lr="),
    (
        "keras.optimizers.X(decay=d)",
        "learning_rate=InverseTimeDecay(lr, decay_steps=1, decay_rate=d)",
        "Keras 2's lr / (1 + d * iterations); Keras 3 ignores decay=",
    ),
    ("keras.optimizers.X(decay=0)", "(removed)", "no decay"),
    (
        "keras.optimizers.X(epsilon=None)",
        "epsilon=keras.backend.epsilon()",
        "Keras 2 used the backend epsilon; Keras 3 fails on None",
    ),
    ("keras.optimizers.X(clipnorm=0 / clipvalue=0)", "(removed)", "Keras 2: 0 meant no clipping"),
    (
        "keras.optimizers.X(a, b, c) (positional)",
        "keywords",
        "Keras 3 reordered the positional arguments",
    ),
    (
        "keras.optimizers.X() without lr (X: Adagrad, Adadelta, Adamax, Nadam), "
        "compile(optimizer='x'), keras.optimizers.get('x')",
        "keras.optimizers.Adadelta(learning_rate=1.0) (Keras 2's default)",
        "Keras 3's default learning rate differs (Adadelta: 1.0 -> 0.001)",
    ),
    (
        "keras.optimizers.X(...) (X: RMSprop, Adagrad, Nadam), compile(optimizer='x')",
        "parallel_keras.compat.keras2_optimizer(keras.optimizers.RMSprop)(...)",
        "Keras 3's update formula differs (sqrt(a + eps) for sqrt(a) + eps; Nadam's schedule)",
        "keras.optimizers.RMSprop(...)",
    ),
    ("keras.optimizers.Nadam(schedule_decay=)", None, "Keras 3's Nadam has a fixed schedule"),
    (
        "keras.optimizers.X(decay=d) next to ReduceLROnPlateau, LearningRateScheduler, "
        "K.set_value(model.optimizer.lr, x) or model.optimizer.lr = x",
        "parallel_keras.compat.keras2_optimizer(keras.optimizers.SGD)(lr=..., decay=d)",
        "Keras 2's settable lr, decayed at each update; a Keras 3 schedule cannot be set",
        "keras.optimizers.SGD(learning_rate=InverseTimeDecay(...)) without the callback",
    ),
    (
        "ReduceLROnPlateau / LearningRateScheduler next to a Keras 3 schedule "
        "(one already written, tf.keras RMSprop/Adagrad/Nadam decay=, decay= of an "
        "optimizer chosen at run time)",
        None,
        "Keras 3 does not let callbacks overwrite a schedule",
    ),
]


class OptimizerRule(context.Rule):
    """`Adam(lr=a, decay=d)` -> `Adam(learning_rate=InverseTimeDecay(a, ...))`."""

    name = RULE

    def __init__(self):
        # Names bound to an optimizer class, or to a dict of them (factories).
        self._factories: set[str] = set()
        # Whether the script decays a learning rate with a Keras 3 schedule (one
        # written already, or a `decay=` that becomes one).
        self._uses_decay = False
        # Whether something sets the optimizer's rate while it trains (a
        # ReduceLROnPlateau / LearningRateScheduler, `K.set_value(...lr, x)`,
        # `model.optimizer.lr = x`): a `decay=` then keeps Keras 2's settable
        # rate through compat.keras2_optimizer instead of a schedule.
        self._sets_lr = False
        # Whether the script imports standalone Keras (`import keras`, `from
        # keras.x import y`) or tf.keras: a string optimizer ('adadelta') had
        # Keras 2.2-2.3's default learning rate only in the former.
        self._standalone = False
        self._tf_keras = False

    def visit_Import(self, ctx, node):
        for alias in node.names:
            module = syntax.dotted(alias.name) or ""
            if module == "keras" or module.startswith("keras."):
                self._standalone = True
            elif module.startswith("tensorflow.keras") or module == "tf_keras":
                self._tf_keras = True

    def visit_ImportFrom(self, ctx, node):
        module = syntax.dotted(node.module) if node.module is not None else ""
        module = module or ""
        if node.relative:
            return
        if module == "keras" or module.startswith("keras."):
            self._standalone = True
        elif module.startswith("tensorflow.keras") or module.startswith("tf_keras"):
            self._tf_keras = True
        elif module == "tensorflow" and not isinstance(node.names, cst.ImportStar):
            if any(syntax.dotted(alias.name) == "keras" for alias in node.names):
                self._tf_keras = True

    def visit_Attribute(self, ctx, node):
        if syntax.dotted(node) in ("tf.keras", "tensorflow.keras"):
            self._tf_keras = True

    def _record_factories(self, ctx, node):
        value = node.value

        def is_class(v):
            name = ctx.qualified_name(v) or ""
            return name.rpartition(".")[2] in LEGACY_SIGNATURES and name.startswith(
                "keras.optimizers."
            )

        factory = is_class(value) or (
            isinstance(value, cst.Dict)
            and value.elements
            and all(isinstance(e, cst.DictElement) and is_class(e.value) for e in value.elements)
        )
        if factory:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._factories.add(target.target.value)

    def _factory_call(self, ctx, call: cst.Call) -> bool:
        """`OPTIMIZERS[name](...)`, `getattr(keras.optimizers, name)(...)`, `opt_class(...)`."""
        func = call.func
        if isinstance(func, cst.Subscript):
            return syntax.dotted(func.value) in self._factories
        if isinstance(func, cst.Name):
            return func.value in self._factories
        return (
            isinstance(func, cst.Call)
            and syntax.dotted(func.func) == "getattr"
            and len(func.args) >= 2
            and ctx.qualified_name(func.args[0].value)
            in ("keras.optimizers", "keras.optimizers.legacy")
        )

    def visit_Call(self, ctx, node):
        if ctx.qualified_name(node.func) in _SCHEDULES:
            self._uses_decay = True  # Written by an earlier run.
        if _sets_learning_rate(ctx, node):
            self._sets_lr = True
        if self._factory_call(ctx, node):
            decay = syntax.keyword(node, "decay")
            if decay is not None and not syntax.is_zero(decay.value):
                self._uses_decay = True
            return
        optimizer_class = _optimizer_class(ctx, node)
        if optimizer_class is None:
            return
        if _keras2_decay(ctx, node, optimizer_class) is not None and not _settable_decay(
            ctx, node, optimizer_class
        ):
            self._uses_decay = True

    def visit_Assign(self, ctx, node):
        # `model.optimizer.lr = 0.01` (Keras 2's rate was a settable variable).
        if any(_optimizer_rate(target.target) for target in node.targets):
            self._sets_lr = True
        self._record_factories(ctx, node)

    def leave_Call(self, ctx, original, updated):
        name = _optimizer_class(ctx, original)
        if (
            name is not None
            and self._sets_lr
            and not syntax.has_star(updated)
            and _keras2_decay(ctx, original, name) is not None
            and _settable_decay(ctx, original, name)
        ):
            return self._settable_decay(ctx, original, name, updated)
        if ctx.qualified_name(original.func) in _SETS_LR and self._uses_decay:
            ctx.flag(
                original,
                RULE,
                "this callback sets the learning rate, and the optimizer's "
                "`decay` became a learning-rate schedule, which Keras 3 does "
                "not let callbacks overwrite",
                "keep the schedule and drop this callback, or drop the "
                "schedule (pass a float learning_rate) to keep the callback.",
            )
        if self._factory_call(ctx, original) and not syntax.has_star(updated):
            return self._factory(ctx, original, updated)
        name = _optimizer_class(ctx, original)
        if name is None:
            return self._string_call(ctx, original, updated)
        if syntax.has_star(updated):
            return updated
        messages = []
        if len(syntax.positional(updated)) > 1:
            updated, named = syntax.keywordize(updated, LEGACY_SIGNATURES[name])
            messages.append(
                f"passed {', '.join(named)} by keyword (Keras 3 reordered the positional arguments)"
            )
        lr = syntax.keyword(updated, "lr")
        if lr is not None:
            if syntax.keyword(updated, "learning_rate") is not None:
                ctx.flag(
                    original,
                    RULE,
                    f"{name} gets both lr= and learning_rate=",
                    "remove lr= (Keras 3 only knows learning_rate=).",
                )
                return updated
            updated = updated.with_changes(
                args=[
                    arg.with_changes(keyword=cst.Name("learning_rate")) if arg is lr else arg
                    for arg in updated.args
                ]
            )
            messages.append("`lr=` -> `learning_rate=` (Keras 3 rejects lr=)")
        decay = syntax.keyword(updated, "decay")
        if decay is not None:
            updated = syntax.remove_args(updated, [decay])
            if syntax.is_zero(decay.value):
                messages.append("removed `decay=0` (no decay; Keras 3 rejects the argument)")
            else:
                updated = self._decay_schedule(ctx, name, updated, decay.value)
                messages.append(
                    "`decay=d` -> learning_rate=InverseTimeDecay(lr, "
                    "decay_steps=1, decay_rate=d): Keras 2's lr / (1 + d * "
                    "iterations); Keras 3 ignores decay= with only a warning"
                )
        updated = self._default_learning_rate(ctx, original, name, updated, messages)
        updated = self._changed_meaning(ctx, original, name, updated, messages)
        if messages:
            ctx.change(original, RULE, f"{name}: " + "; ".join(messages))
        if name in KERAS2_FORMULAS and standalone_keras(ctx, original.func):
            # Nadam's schedule_decay works there too.
            return self._keras2_formula(ctx, original, name, updated)
        if syntax.keyword(updated, "schedule_decay") is not None:
            ctx.flag(
                original,
                RULE,
                "Nadam's `schedule_decay` does not exist in Keras 3",
                "remove schedule_decay= (Keras 3's Nadam has a fixed momentum schedule).",
            )
        return updated

    def _settable_decay(self, ctx, original, name, updated):
        """`SGD(lr=a, decay=d)` next to a callback that sets the rate ->
        `parallel_keras.compat.keras2_optimizer(SGD)(lr=a, decay=d)`."""
        ctx.require_import("parallel_keras")
        wrapped = cst.Call(func=syntax.expression(_KERAS2_OPTIMIZER), args=[cst.Arg(updated.func)])
        keras_class = f"keras.optimizers.{name}"
        reasons = [
            "Keras 2 divided its settable `lr` by (1 + decay * iterations) at each update, "
            "and this script sets the rate while it trains; a Keras 3 InverseTimeDecay "
            "schedule would compute the decay but cannot be set (TypeError at the callback)"
        ]
        if name in KERAS2_FORMULAS:
            reasons.append(KERAS2_FORMULAS[name])
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(updated.func)}(..., decay=...)` -> `{_KERAS2_OPTIMIZER}("
            f"{syntax.code(updated.func)})(...)` with Keras 2's arguments: " + "; ".join(reasons),
            f"`{keras_class}(learning_rate=keras.optimizers.schedules.InverseTimeDecay(lr, "
            "decay_steps=1, decay_rate=decay))` without a callback that sets the rate, or a "
            "float learning_rate (no decay) with it",
        )
        return updated.with_changes(func=wrapped)

    def _keras2_formula(self, ctx, original, name, updated):
        """`RMSprop(...)` -> `parallel_keras.compat.keras2_optimizer(RMSprop)(...)`."""
        ctx.require_import("parallel_keras")
        wrapped = cst.Call(func=syntax.expression(_KERAS2_OPTIMIZER), args=[cst.Arg(updated.func)])
        keras_class = f"keras.optimizers.{name}"
        ctx.compat(
            original,
            RULE,
            f"`{syntax.code(updated.func)}(...)` -> `{_KERAS2_OPTIMIZER}("
            f"{syntax.code(updated.func)})(...)`: {KERAS2_FORMULAS[name]}",
            f"`{keras_class}(...)` (Keras 3's formula: slightly different steps)",
        )
        return updated.with_changes(func=wrapped)

    def _default_learning_rate(self, ctx, original, name, updated, messages):
        """`Adadelta()` -> `Adadelta(learning_rate=1.0)`: Keras 2's default, written out."""
        default = LEGACY_DEFAULT_LR[name]
        if (
            default == KERAS3_DEFAULT_LR[name]
            or syntax.keyword(updated, "learning_rate") is not None
            or syntax.positional(updated)
            or not standalone_keras(ctx, original.func)
        ):
            return updated
        new_arg = syntax.make_arg("learning_rate", syntax.expression(default))
        if updated.args:
            new_arg = new_arg.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        messages.append(
            f"wrote out `learning_rate={default}`, Keras 2's default (Keras 3's default "
            f"is {KERAS3_DEFAULT_LR[name]})"
        )
        return updated.with_changes(args=[new_arg, *updated.args])

    def _string_call(self, ctx, original, updated):
        """`compile(optimizer='adadelta')`, `keras.optimizers.get('adadelta')`."""
        if not self._standalone or self._tf_keras or syntax.has_star(updated):
            return updated
        if ctx.qualified_name(original.func) == "keras.optimizers.get":
            arg = syntax.keyword(updated, "identifier") or next(
                iter(syntax.positional(updated)), None
            )
            if arg is None or len(updated.args) != 1:
                return updated
            name = _string_optimizer(arg.value)
            if not _string_differs(name):
                return updated
            new = self._optimizer_expression(ctx, name)
            self._record_string(ctx, original, name, syntax.code(original), syntax.code(new))
            return new
        if syntax.method_name(original) != "compile" or not isinstance(
            original.func, cst.Attribute
        ):
            return updated
        if ctx.qualified_name(original.func) in _NOT_MODEL_COMPILE:
            return updated  # `re.compile('adam')`
        arg = syntax.keyword(updated, "optimizer")
        if arg is None:
            positional = syntax.positional(updated)
            arg = positional[0] if positional else None
        if arg is None:
            return updated
        original_arg = syntax.keyword(original, "optimizer") or syntax.positional(original)[0]
        name = _string_optimizer(arg.value) or _string_optimizer(
            _module_constant(ctx, original_arg.value)
        )
        if not _string_differs(name):
            return updated
        new = self._optimizer_expression(ctx, name)
        self._record_string(
            ctx,
            original,
            name,
            f"optimizer={syntax.code(arg.value)}",
            f"optimizer={syntax.code(new)}",
        )
        return updated.with_changes(
            args=[a.with_changes(value=new) if a is arg else a for a in updated.args]
        )

    def _optimizer_expression(self, ctx, name):
        """`keras.optimizers.<name>(learning_rate=<Keras 2's default>)`, through
        `keras2_optimizer` where Keras 3's formula differs."""
        keras_class = f"{ctx.keras_module()}.optimizers.{name}"
        arguments = ""
        if LEGACY_DEFAULT_LR[name] != KERAS3_DEFAULT_LR[name]:
            arguments = f"learning_rate={LEGACY_DEFAULT_LR[name]}"
        if name in KERAS2_FORMULAS:
            ctx.require_import("parallel_keras")
            return syntax.expression(f"{_KERAS2_OPTIMIZER}({keras_class})({arguments})")
        return syntax.expression(f"{keras_class}({arguments})")

    def _record_string(self, ctx, original, name, before, after):
        """The report line of a string optimizer that became a class."""
        reasons = []
        if LEGACY_DEFAULT_LR[name] != KERAS3_DEFAULT_LR[name]:
            reasons.append(
                f"Keras 2's default learning rate is {LEGACY_DEFAULT_LR[name]}, Keras 3's "
                f"{KERAS3_DEFAULT_LR[name]}"
            )
        if name not in KERAS2_FORMULAS:
            ctx.change(original, RULE, f"`{before}` -> `{after}`: " + "; ".join(reasons))
            return
        reasons.append(KERAS2_FORMULAS[name])
        ctx.compat(
            original,
            RULE,
            f"`{before}` -> `{after}`: " + "; ".join(reasons),
            f"`keras.optimizers.{name}(learning_rate={LEGACY_DEFAULT_LR[name]})` "
            "(Keras 3's formula: slightly different steps)",
        )

    def _changed_meaning(self, ctx, original, name, updated, messages):
        """`epsilon=None`, `clipnorm=0`, `clipvalue=0`: Keras 2's defaults, spelled out."""
        epsilon = syntax.keyword(updated, "epsilon")
        if epsilon is not None and syntax.dotted(epsilon.value) == "None":
            # Keras 2: `if epsilon is None: epsilon = K.epsilon()` (1e-7 by default).
            keras_module = ctx.keras_module()
            updated = updated.with_changes(
                args=[
                    arg.with_changes(value=syntax.expression(f"{keras_module}.backend.epsilon()"))
                    if arg is epsilon
                    else arg
                    for arg in updated.args
                ]
            )
            messages.append(
                "`epsilon=None` -> `epsilon=keras.backend.epsilon()` (what "
                "Keras 2 used; Keras 3 fails on None at the first update)"
            )
        zero_clips = {
            name: arg
            for name in ("clipnorm", "clipvalue")
            if (arg := syntax.keyword(updated, name)) is not None and syntax.is_zero(arg.value)
        }
        if zero_clips:
            # Keras 2 tested `if clipnorm > 0`: 0 meant no clipping. Keras 3
            # skips 0 too but counts it as set, so `clipnorm=0, clipvalue=1`
            # raises "Only one of clipnorm, clipvalue...".
            updated = syntax.remove_args(updated, list(zero_clips.values()))
            messages.append(
                "removed "
                + ", ".join(f"`{name}=0`" for name in zero_clips)
                + " (Keras 2: no clipping; Keras 3 counts it as a clipping choice)"
            )
        return updated

    def _factory(self, ctx, original, updated):
        """An optimizer picked at run time: only keywords can be rewritten."""
        lr = syntax.keyword(updated, "lr")
        decay = syntax.keyword(updated, "decay")
        if lr is None and decay is None:
            return updated
        messages = []
        if lr is not None:
            updated = updated.with_changes(
                args=[
                    arg.with_changes(keyword=cst.Name("learning_rate")) if arg is lr else arg
                    for arg in updated.args
                ]
            )
            messages.append("`lr=` -> `learning_rate=`")
        decay = syntax.keyword(updated, "decay")
        if decay is not None and syntax.is_zero(decay.value):
            updated = syntax.remove_args(updated, [decay])
            messages.append("removed `decay=0`")
        elif decay is not None and lr is not None:
            updated = syntax.remove_args(updated, [decay])
            updated = self._decay_schedule(ctx, "SGD", updated, decay.value)
            messages.append(
                "`decay=d` -> learning_rate=InverseTimeDecay(lr, decay_steps=1, decay_rate=d)"
            )
        elif decay is not None:
            ctx.flag(
                original,
                RULE,
                "an optimizer chosen at run time gets decay= without lr=",
                "pass learning_rate=keras.optimizers.schedules.InverseTimeDecay(<the "
                "optimizer's default lr>, decay_steps=1, decay_rate=<decay>) instead.",
            )
        if messages:
            ctx.change(original, RULE, "optimizer chosen at run time: " + "; ".join(messages))
        return updated

    def _decay_schedule(self, ctx, name, call, decay_value):
        keras_module = ctx.keras_module()
        learning_rate = syntax.keyword(call, "learning_rate")
        positional = syntax.positional(call)
        if learning_rate is not None:
            initial = learning_rate.value
        elif positional:
            initial = positional[0].value
        else:
            initial = syntax.expression(LEGACY_DEFAULT_LR[name])
        schedule = cst.Call(
            func=syntax.expression(f"{keras_module}.optimizers.schedules.InverseTimeDecay"),
            args=[
                cst.Arg(initial, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                syntax.make_arg("decay_steps", cst.Integer("1")).with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                ),
                syntax.make_arg("decay_rate", decay_value),
            ],
        )
        if learning_rate is not None:
            new_args = [
                arg.with_changes(value=schedule) if arg is learning_rate else arg
                for arg in call.args
            ]
        elif positional:
            new_args = [
                arg.with_changes(value=schedule) if arg is positional[0] else arg
                for arg in call.args
            ]
        else:
            new_arg = syntax.make_arg("learning_rate", schedule)
            if call.args:
                new_arg = new_arg.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            new_args = [new_arg, *call.args]
        return call.with_changes(args=new_args)
