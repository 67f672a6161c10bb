"""Rewrite: Keras 2 backend math (`K.sum`, `K.flatten`, ...) -> `keras.ops`.

Keras 3's `keras.backend` keeps only configuration (`epsilon`, `floatx`,
`image_data_format`, `clear_session`); the tensor functions custom losses
and metrics were written with (`dice_coef`, `f1`, ...) moved to `keras.ops`,
mostly under the same name and arguments. The few that differ are spelled
out: `flatten` is a reshape, `pow` is `power`, `concatenate` defaults to the
last axis, `get_value`/`set_value` become `convert_to_numpy`/`assign`, and an
optimizer's `lr` attribute is `learning_rate`. Other removed backend
functions are flagged.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context
from parallel_keras.migrate import syntax

RULE = "backend ops"

SAME_NAME = frozenset(
    "sum mean max min abs square sqrt exp log log1p clip round sign maximum minimum "
    "equal not_equal greater greater_equal less less_equal cast argmax argmin "
    "expand_dims squeeze stack transpose reshape dot softmax relu sigmoid tanh "
    "cumsum prod any all ones_like zeros_like shape std var".split()
)
KEPT = frozenset(
    "clear_session epsilon floatx image_data_format set_epsilon set_floatx "
    "set_image_data_format is_keras_tensor backend".split()
)
# Handled by other rules (sessions, GPU counts, dim ordering).
_ELSEWHERE = frozenset(
    "set_session get_session _get_available_gpus image_dim_ordering "
    "set_image_dim_ordering tensorflow_backend".split()
)

_ACTIONS = {
    "learning_phase": "delete it; pass training=True/False to the model or layer call.",
    "set_learning_phase": "delete it; pass training=True/False to the model or layer call.",
    "function": "call the model (or a keras.Model of the wanted outputs) directly.",
    "placeholder": "use keras.Input(shape=...).",
}


class BackendOpsRule(context.Rule):
    """`K.sum(x, axis=-1)` -> `keras.ops.sum(x, axis=-1)`."""

    name = RULE

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        module, _, name = qualified.rpartition(".")
        if module != "keras.backend" or name in KEPT or name in _ELSEWHERE:
            return updated
        ops = f"{ctx.keras_module()}.ops"
        text = syntax.dotted(original.func)
        if name in SAME_NAME or name == "pow":
            new_name = "power" if name == "pow" else name
            ctx.change(original, RULE, f"`{text}` -> `{ops}.{new_name}` (Keras 3 moved "
                       "backend math to keras.ops)")
            return updated.with_changes(func=syntax.expression(f"{ops}.{new_name}"))
        if name == "flatten" and len(updated.args) == 1:
            ctx.change(original, RULE, f"`{text}(x)` -> `{ops}.reshape(x, (-1,))`")
            return updated.with_changes(
                func=syntax.expression(f"{ops}.reshape"),
                args=[updated.args[0].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" "))),
                      cst.Arg(syntax.expression("(-1,)"))],
            )
        if name == "concatenate":
            args = list(updated.args)
            if len(syntax.positional(updated)) < 2 and syntax.keyword(updated, "axis") is None:
                args[-1] = args[-1].with_changes(comma=cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(syntax.make_arg("axis", syntax.expression("-1")))
            ctx.change(original, RULE, f"`{text}` -> `{ops}.concatenate` with Keras 2's "
                       "default axis=-1")
            return updated.with_changes(func=syntax.expression(f"{ops}.concatenate"), args=args)
        if name == "get_value" and len(updated.args) == 1:
            ctx.change(original, RULE, f"`{text}(x)` -> `{ops}.convert_to_numpy(x)`")
            return updated.with_changes(func=syntax.expression(f"{ops}.convert_to_numpy"))
        if name == "set_value" and len(updated.args) == 2:
            ctx.change(original, RULE, f"`{text}(variable, value)` -> `variable.assign(value)`")
            variable, value = updated.args
            return cst.Call(
                func=cst.Attribute(value=variable.value, attr=cst.Name("assign")),
                args=[value.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
            )
        action = _ACTIONS.get(name, "use the keras.ops function of the same meaning "
                              "(https://keras.io/api/ops/).")
        ctx.flag(original, RULE, f"`{text}` does not exist in Keras 3", action)
        return updated

    def leave_Attribute(self, ctx, original, updated):
        # `model.optimizer.lr` -> `model.optimizer.learning_rate`.
        if original.attr.value != "lr":
            return updated
        owner = original.value
        owner_name = owner.attr.value if isinstance(owner, cst.Attribute) else (
            owner.value if isinstance(owner, cst.Name) else "")
        if owner_name not in ("optimizer", "opt", "optim"):
            return updated
        ctx.change(original, RULE, f"`{syntax.dotted(original)}` -> `.learning_rate` "
                   "(Keras 3 optimizers have no `lr`)")
        return updated.with_changes(attr=cst.Name("learning_rate"))
