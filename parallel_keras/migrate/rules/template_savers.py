"""Rewrite: hand-written classes that exist only to save the template model.

Keras 2's parallel model could not be saved, so scripts carried workarounds:

* the seeds' `ParallelModelCheckpoint(ModelCheckpoint)` whose `set_model`
  passes the stored template instead of the parallel model;
* `ModelCheckpoint` subclasses that swap `self.model` for the template in
  `on_epoch_end` (the "AltModelCheckpoint" recipe);
* `Model` subclasses that copy `multi_gpu_model(...).__dict__` and route
  `save`/`load` attributes to the template (the "ModelMGPU" recipe).

In Keras 3 each one breaks (`ModelCheckpoint` has no `period`, a `Model`
cannot adopt another's `__dict__`). `parallel_keras.ParallelModelCheckpoint`
takes the seeds' exact signature, and the model `multi_gpu_model` returns
already saves and loads the template. A class with the seeds' exact
signature becomes an import of the library class; any other checkpoint
class keeps its signature and delegates to it; ModelMGPU becomes a function.
Classes that do more than that are flagged, not guessed at.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context
from parallel_keras.migrate import syntax

RULE = "checkpoint classes"

# The seeds' signature, which parallel_keras.ParallelModelCheckpoint keeps.
_LEGACY_PARAMETERS = (
    ("filepath", None),
    ("monitor", "'val_loss'"),
    ("verbose", "0"),
    ("save_best_only", "False"),
    ("save_weights_only", "False"),
    ("mode", "'auto'"),
    ("period", "1"),
)
_MODEL_BASES = frozenset(
    {"keras.Model", "keras.models.Model", "keras.engine.training.Model", "Model"}
)
_SWAP = m.Assign(
    targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name("model")))],
    value=m.Attribute(value=m.Name("self")),
)
_SET_MODEL_WITH_ATTRIBUTE = m.Call(
    func=m.Attribute(attr=m.Name("set_model")),
    args=[m.Arg(value=m.Attribute(value=m.Name("self")))],
)
_DICT_UPDATE = m.Call(
    func=m.Attribute(
        value=m.Attribute(value=m.Name("self"), attr=m.Name("__dict__")),
        attr=m.Name("update"),
    ),
    args=[m.Arg(value=m.Attribute(attr=m.Name("__dict__")))],
)


class TemplateSaverRule(context.Rule):
    """Replaces template-saving workaround classes."""

    name = RULE

    def leave_ClassDef(self, ctx, original, updated):
        base_names = [ctx.qualified_name(base.value) for base in original.bases]
        methods = {
            statement.name.value: statement
            for statement in updated.body.body
            if isinstance(statement, cst.FunctionDef)
        }
        for index, base in enumerate(base_names):
            if base is not None and base.split(".")[-1] == "ModelCheckpoint" and (
                base.startswith("keras.") or base == "ModelCheckpoint"
            ):
                return self._checkpoint(ctx, original, updated, index, methods)
        if any(base in _MODEL_BASES for base in base_names):
            return self._model_mgpu(ctx, original, updated, methods)
        return updated

    # -- ModelCheckpoint subclasses ----------------------------------------

    def _checkpoint(self, ctx, original, updated, base_index, methods):
        class_name = updated.name.value
        swap_methods = {}
        template_attribute = None
        for name, method in methods.items():
            found = _template_attribute(method, name)
            if found is not None:
                swap_methods[name] = method
                template_attribute = found
        if template_attribute is None:
            return updated
        init = methods.get("__init__")
        template_parameter = _assigned_parameter(init, template_attribute)
        super_call = _super_init_call(init, updated.bases[base_index].value)
        unsafe = [
            name for name, method in swap_methods.items()
            if not _only_swaps(method.body.body)
        ]
        if template_parameter is None or super_call is None or unsafe:
            ctx.flag(
                original,
                RULE,
                f"class {class_name} saves a stored model instead of the "
                "parallel one, but does more than parallel_keras's "
                "checkpoint does, so it was not rewritten",
                f"replace {class_name} with parallel_keras.ParallelModelCheckpoint("
                "template, filepath, ...) (Keras 2 ModelCheckpoint arguments, "
                "period included), or subclass it and keep only your extra code.",
            )
            return updated
        if _is_exact_seed_class(updated, init, template_parameter, super_call, swap_methods):
            alias = "" if class_name == "ParallelModelCheckpoint" else f" as {class_name}"
            ctx.change(
                original,
                RULE,
                f"class {class_name} -> `from parallel_keras import "
                f"ParallelModelCheckpoint{alias}`: same signature, saves "
                "through the template, accepts period= on Keras 3",
            )
            statement = cst.parse_statement(
                f"from parallel_keras import ParallelModelCheckpoint{alias}\n"
            )
            return statement.with_changes(leading_lines=updated.leading_lines)
        return self._delegate(
            ctx, original, updated, base_index, init, template_parameter,
            super_call, swap_methods, template_attribute,
        )

    def _delegate(
        self, ctx, original, updated, base_index, init, template_parameter,
        super_call, swap_methods, template_attribute,
    ):
        ctx.require_import("parallel_keras")
        library_class = syntax.expression("parallel_keras.ParallelModelCheckpoint")
        bases = list(updated.bases)
        bases[base_index] = bases[base_index].with_changes(value=library_class)
        template_arg = cst.Arg(
            value=cst.Name(template_parameter),
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        )
        args = list(super_call.args)
        func = super_call.func
        insert_at = 0
        if not isinstance(func.value, cst.Call):  # ModelCheckpoint.__init__(self, ...)
            func = func.with_changes(value=library_class)
            insert_at = 1
        if insert_at == len(args):
            template_arg = template_arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        args.insert(insert_at, template_arg)
        new_init = init.deep_replace(
            super_call, super_call.with_changes(func=func, args=args)
        )
        if template_attribute == "model":
            # Keras 3 callbacks do not let `self.model` be assigned; the
            # library class keeps the template itself.
            kept = [
                statement for statement in new_init.body.body
                if not m.matches(statement, m.SimpleStatementLine(body=[m.Assign(
                    targets=[m.AssignTarget(target=m.Attribute(
                        value=m.Name("self"), attr=m.Name("model")))],
                    value=m.Name(template_parameter),
                )]))
            ]
            new_init = new_init.with_changes(body=new_init.body.with_changes(body=kept))
        body = []
        for statement in updated.body.body:
            if statement is init:
                body.append(new_init)
            elif not any(statement is method for method in swap_methods.values()):
                body.append(statement)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        ctx.change(
            original,
            RULE,
            f"class {updated.name.value} now subclasses "
            "parallel_keras.ParallelModelCheckpoint, passing "
            f"`{template_parameter}` as the template; removed "
            f"{', '.join(sorted(swap_methods))} (they swapped in the template, "
            "which the library class does)",
        )
        return updated.with_changes(
            bases=bases, body=updated.body.with_changes(body=body)
        )

    # -- Model subclasses adopting multi_gpu_model(...).__dict__ -----------

    def _model_mgpu(self, ctx, original, updated, methods):
        init = methods.get("__init__")
        if init is None or not m.findall(init, _DICT_UPDATE):
            return updated
        class_name = updated.name.value
        parallel_call = _multi_gpu_call(init, ctx.shared.get("multi_gpu_names", ()))
        extra = set(methods) - {"__init__", "__getattribute__", "__getattr__"}
        if parallel_call is None or extra or not _only_adopts(init.body.body):
            ctx.flag(
                original,
                RULE,
                f"class {class_name} copies a multi_gpu_model's __dict__, which "
                "Keras 3 models do not allow, and does more, so it was not "
                "rewritten",
                f"use parallel_keras.multi_gpu_model(template, gpus) directly: "
                "the model it returns saves and loads the template.",
            )
            return updated
        function = cst.FunctionDef(
            name=cst.Name(class_name),
            params=init.params.with_changes(params=init.params.params[1:]),
            body=cst.IndentedBlock(
                body=[cst.SimpleStatementLine([cst.Return(value=parallel_call)])]
            ),
            leading_lines=updated.leading_lines,
        )
        ctx.change(
            original,
            RULE,
            f"class {class_name} -> function {class_name} returning the "
            "multi_gpu_model: Keras 3 models cannot adopt another model's "
            "__dict__, and parallel_keras's parallel model already saves and "
            "loads through the template",
        )
        return function


def _template_attribute(method: cst.FunctionDef, name: str) -> str | None:
    """`x` when the method swaps in `self.x` for the parallel model."""
    if name == "set_model":
        for call in m.findall(method, _SET_MODEL_WITH_ATTRIBUTE):
            return call.args[0].value.attr.value
    if name == "set_model" or (name.startswith("on_") and name.endswith("_end")):
        for assign in m.findall(method, _SWAP):
            return assign.value.attr.value
    if name == "set_model" and all(_is_docstring(s) for s in method.body.body):
        # `set_model` does nothing, so `self.model` stays what `__init__`
        # assigned: the template.
        return "model"
    return None


def _assigned_parameter(init, attribute: str) -> str | None:
    """`p` for `self.<attribute> = p` in `__init__`, p being a parameter."""
    if init is None:
        return None
    parameters = {param.name.value for param in init.params.params}
    target = m.Assign(
        targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name(attribute)))],
        value=m.Name(),
    )
    for assign in m.findall(init, target):
        if assign.value.value in parameters:
            return assign.value.value
    return None


def _super_init_call(init, base: cst.BaseExpression) -> cst.Call | None:
    if init is None:
        return None
    base_text = syntax.dotted(base)
    for call in m.findall(init, m.Call(func=m.Attribute(attr=m.Name("__init__")))):
        owner = call.func.value
        if isinstance(owner, cst.Call) and syntax.dotted(owner.func) == "super":
            return call
        if syntax.dotted(owner) == base_text:
            return call
    return None


def _only_swaps(statements) -> bool:
    """Whether a method only swaps `self.model` and calls the base class."""
    for statement in statements:
        if isinstance(statement, cst.Try):
            blocks = [statement.body.body]
            if statement.finalbody is not None:
                blocks.append(statement.finalbody.body.body)
            if statement.handlers or statement.orelse:
                return False
            if not all(_only_swaps(block) for block in blocks):
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
                if value is not None and (
                    "self.model" in texts or value == "self.model"
                ):
                    continue
            return False
    return True


def _is_exact_seed_class(classdef, init, template_parameter, super_call, swap_methods):
    """Whether the class is the seeds' class: same signature, nothing else."""
    if template_parameter != "model":
        return False
    for statement in classdef.body.body:
        if isinstance(statement, cst.FunctionDef):
            if statement is not init and statement.name.value not in swap_methods:
                return False
        elif not _is_docstring(statement):
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
    passed = [arg for arg in super_call.args if not (
        isinstance(arg.value, cst.Name) and arg.value.value == "self" and arg.keyword is None
        and not isinstance(super_call.func.value, cst.Call)
    )]
    expected = [param.name.value for param in rest]
    if len(passed) != len(expected):
        return False
    for arg, name in zip(passed, expected):
        if not (isinstance(arg.value, cst.Name) and arg.value.value == name):
            return False
        if arg.keyword is not None and arg.keyword.value != name:
            return False
    for statement in init.body.body:
        if _is_docstring(statement):
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


def _is_docstring(statement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Pass, cst.Expr))
        and (
            isinstance(statement.body[0], cst.Pass)
            or isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        )
    )


def _multi_gpu_call(init, aliases) -> cst.Call | None:
    """The `multi_gpu_model(...)` call whose `__dict__` the class adopts."""
    source = m.findall(init, _DICT_UPDATE)[0].args[0].value.value
    if isinstance(source, cst.Call):
        candidates = [source]
    elif isinstance(source, cst.Name):
        candidates = [
            assign.value
            for assign in m.findall(
                init,
                m.Assign(targets=[m.AssignTarget(target=m.Name(source.value))], value=m.Call()),
            )
        ]
    else:
        return None
    for call in candidates:
        name = syntax.dotted(call.func) or ""
        if name.split(".")[-1] in {"multi_gpu_model", *aliases}:
            return call
    return None


def _only_adopts(statements) -> bool:
    """Whether `__init__` only builds the parallel model and adopts it."""
    for statement in statements:
        if _is_docstring(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Assign):
                continue
            if isinstance(small, cst.Expr) and m.matches(small.value, _DICT_UPDATE):
                continue
            return False
    return True
