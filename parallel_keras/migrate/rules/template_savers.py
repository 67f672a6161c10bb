# SPDX-License-Identifier: Apache-2.0
"""Rewrite: hand-written classes that exist only to save the template model.

Keras 2's parallel model could not be saved, so scripts carried workarounds:

* the legacy tutorials' `ParallelModelCheckpoint(ModelCheckpoint)` whose `set_model`
  passes the stored template instead of the parallel model;
* `ModelCheckpoint` subclasses that swap `self.model` for the template in
  `on_epoch_end` (the "AltModelCheckpoint" recipe);
* `Model` subclasses that copy `multi_gpu_model(...).__dict__` and route
  `save`/`load` attributes to the template (the "ModelMGPU" recipe).

In Keras 3 each one breaks (`ModelCheckpoint` has no `period`, a `Model`
cannot adopt another's `__dict__`). `parallel_keras.ParallelModelCheckpoint`
takes the legacy tutorials' exact signature, and the model `multi_gpu_model` returns
already saves and loads the template. A class with the legacy tutorials' exact
signature becomes an import of the library class; any other checkpoint
class keeps its signature and delegates to it; ModelMGPU becomes a function.
Classes that do more than that are flagged, not guessed at.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import template_saver_patterns as patterns

RULE = "checkpoint classes"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple] = [
    (
        "any other ModelCheckpoint subclass (no __init__, **kwargs passed on, ...)",
        "subclass of parallel_keras.callbacks.ModelCheckpoint",
        "Keras 2's arguments (period=) and attributes, whatever its __init__",
        "subclass keras.callbacks.ModelCheckpoint and pass save_freq instead of period",
    ),
    (
        "class ParallelModelCheckpoint(ModelCheckpoint) (the legacy tutorials')",
        "from parallel_keras import ParallelModelCheckpoint",
        "same signature, period= included",
    ),
    (
        "ModelCheckpoint subclass swapping in a stored template",
        "subclass of parallel_keras.ParallelModelCheckpoint",
        "Keras 3's has no period",
    ),
    (
        "ModelMGPU (a Model adopting multi_gpu_model(...).__dict__)",
        "a function returning parallel_keras.multi_gpu_model(...)",
        "Keras 3 models cannot adopt another's __dict__",
    ),
    (
        "such classes doing more",
        None,
        "use parallel_keras.ParallelModelCheckpoint / multi_gpu_model directly",
    ),
]

_MODEL_BASES = frozenset({"keras.Model", "keras.models.Model", "Model"})


class TemplateSaverRule(context.Rule):
    """Replaces template-saving workaround classes."""

    name = RULE
    reads = {"multi_gpu_names": context.Phase.REWRITE}

    def leave_ClassDef(self, ctx, original, updated):
        base_names = [ctx.qualified_name(base.value) for base in original.bases]
        methods = {
            statement.name.value: statement
            for statement in updated.body.body
            if isinstance(statement, cst.FunctionDef)
        }
        for index, base in enumerate(base_names):
            if (
                base is not None
                and base.split(".")[-1] == "ModelCheckpoint"
                and (base.startswith("keras.") or base == "ModelCheckpoint")
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
            found = patterns.template_attribute(method, name)
            if found is not None:
                swap_methods[name] = method
                template_attribute = found
        if template_attribute is None:
            return self._keras2_period(ctx, original, updated, base_index, methods)
        init = methods.get("__init__")
        template_parameter = patterns.assigned_parameter(init, template_attribute)
        super_call = patterns.super_init_call(init, updated.bases[base_index].value)
        unsafe = [
            name
            for name, method in swap_methods.items()
            if not patterns.only_swaps(syntax.statements(method.body))
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
        if patterns.is_exact_seed_class(
            updated, init, template_parameter, super_call, swap_methods
        ):
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
            ctx,
            original,
            updated,
            base_index,
            init,
            template_parameter,
            super_call,
            swap_methods,
            template_attribute,
        )

    def _delegate(
        self,
        ctx,
        original,
        updated,
        base_index,
        init,
        template_parameter,
        super_call,
        swap_methods,
        template_attribute,
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
        new_init = init.deep_replace(super_call, super_call.with_changes(func=func, args=args))
        if template_attribute == "model":
            # Keras 3 callbacks do not let `self.model` be assigned; the
            # library class keeps the template itself.
            kept = [
                statement
                for statement in new_init.body.body
                if not m.matches(
                    statement,
                    m.SimpleStatementLine(
                        body=[
                            m.Assign(
                                targets=[
                                    m.AssignTarget(
                                        target=m.Attribute(
                                            value=m.Name("self"), attr=m.Name("model")
                                        )
                                    )
                                ],
                                value=m.Name(template_parameter),
                            )
                        ]
                    ),
                )
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
        return updated.with_changes(bases=bases, body=updated.body.with_changes(body=body))

    def _keras2_period(self, ctx, original, updated, base_index, methods):
        """A ModelCheckpoint subclass passing Keras 2's `period` to its base.

        Keras 3 reads the 7th positional argument as `save_freq` (batches), and
        its ModelCheckpoint keeps no `period` or `epochs_since_last_save`, which
        a re-implemented Keras 2 `on_epoch_end` reads. The base becomes
        `parallel_keras.callbacks.ModelCheckpoint` (Keras 2's order, `period`
        and `self.period`), and the counter starts at 0 as in Keras 2.
        """
        init = methods.get("__init__")
        super_call = (
            patterns.super_init_call(init, updated.bases[base_index].value)
            if init is not None
            else None
        )
        if super_call is None:
            # No __init__, or one that does not call the base's by a name
            # seen here (`*args, **kwargs` passed on, a helper): callers may
            # still pass `period=`, which only parallel_keras's base takes.
            return self._any_checkpoint_subclass(ctx, original, updated, base_index, init)
        func = super_call.func  # `super().__init__` or `ModelCheckpoint.__init__`.
        by_name = isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Call)
        passes_period = syntax.keyword(super_call, "period") is not None or len(
            syntax.positional(super_call)
        ) >= (8 if by_name else 7)
        if not passes_period:
            return self._any_checkpoint_subclass(ctx, original, updated, base_index, init)
        ctx.require_import("parallel_keras.callbacks")
        library_class = syntax.expression("parallel_keras.callbacks.ModelCheckpoint")
        bases = list(updated.bases)
        bases[base_index] = bases[base_index].with_changes(value=library_class)
        body = list(updated.body.body)
        counter = m.Attribute(value=m.Name("self"), attr=m.Name("epochs_since_last_save"))
        reads_counter = bool(m.findall(updated, counter))
        sets_counter = bool(m.findall(init, m.Assign(targets=[m.AssignTarget(target=counter)])))
        note = ""
        new_init = init
        if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Call):
            # ModelCheckpoint.__init__(self, ...)
            new_init = new_init.deep_replace(
                super_call, super_call.with_changes(func=func.with_changes(value=library_class))
            )
        if reads_counter and not sets_counter:
            new_init = new_init.with_changes(
                body=new_init.body.with_changes(
                    body=[
                        *new_init.body.body,
                        cst.parse_statement("self.epochs_since_last_save = 0\n"),
                    ]
                )
            )
            note = "; `self.epochs_since_last_save = 0` added (Keras 2's base set it)"
        body = [new_init if statement is init else statement for statement in body]
        ctx.change(
            original,
            RULE,
            f"class {updated.name.value} now subclasses "
            "parallel_keras.callbacks.ModelCheckpoint: it passes Keras 2's `period` "
            "to its base, which Keras 3's ModelCheckpoint reads as save_freq "
            f"(batches){note}",
        )
        return updated.with_changes(bases=bases, body=updated.body.with_changes(body=body))

    def _any_checkpoint_subclass(self, ctx, original, updated, base_index, init):
        """Any other `keras.callbacks.ModelCheckpoint` subclass: Keras 2's base.

        Its callers may pass `period=` (through `**kwargs`, or to a class
        without `__init__`), and its methods may read Keras 2's
        `self.period` / `self.epochs_since_last_save`: the base becomes
        `parallel_keras.callbacks.ModelCheckpoint`, which takes and keeps
        them, whatever the `__init__` looks like.
        """
        if not _may_take_period(init, updated):
            return updated  # Keras 3's ModelCheckpoint runs it as it is.
        ctx.require_import("parallel_keras.callbacks")
        library_class = syntax.expression("parallel_keras.callbacks.ModelCheckpoint")
        bases = list(updated.bases)
        bases[base_index] = bases[base_index].with_changes(value=library_class)
        body = list(updated.body.body)
        if init is not None:
            super_call = patterns.super_init_call(init, original.bases[base_index].value)
            func = super_call.func if super_call is not None else None
            if (
                super_call is not None
                and isinstance(func, cst.Attribute)
                and not isinstance(func.value, cst.Call)
            ):
                new_init = init.deep_replace(
                    super_call,
                    super_call.with_changes(func=func.with_changes(value=library_class)),
                )
                body = [new_init if statement is init else statement for statement in body]
        counter = m.Attribute(value=m.Name("self"), attr=m.Name("epochs_since_last_save"))
        if m.findall(updated, counter) and not m.findall(
            updated, m.Assign(targets=[m.AssignTarget(target=counter)])
        ):
            # Keras 2's base started the counter at 0; a class attribute does
            # it whatever the __init__.
            body.insert(0, cst.parse_statement("epochs_since_last_save = 0\n"))
        ctx.compat(
            original,
            RULE,
            f"class {updated.name.value} now subclasses "
            "parallel_keras.callbacks.ModelCheckpoint: Keras 2's arguments (`period=`, "
            "in Keras 2's order) and attributes (`self.period`), which Keras 3's lacks",
            "subclass keras.callbacks.ModelCheckpoint and pass save_freq (batches) "
            "instead of period (epochs)",
        )
        return updated.with_changes(bases=bases, body=updated.body.with_changes(body=body))

    # -- Model subclasses adopting multi_gpu_model(...).__dict__ -----------

    def _model_mgpu(self, ctx, original, updated, methods):
        init = methods.get("__init__")
        if init is None or not m.findall(init, patterns.DICT_UPDATE):
            return updated
        class_name = updated.name.value
        parallel_call = patterns.multi_gpu_call(init, ctx.facts.multi_gpu_names)
        extra = set(methods) - {"__init__", "__getattribute__", "__getattr__"}
        if parallel_call is None or extra or not patterns.only_adopts(syntax.statements(init.body)):
            ctx.flag(
                original,
                RULE,
                f"class {class_name} copies a multi_gpu_model's __dict__, which "
                "Keras 3 models do not allow, and does more, so it was not "
                "rewritten",
                "use parallel_keras.multi_gpu_model(template, gpus) directly: "
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


def _may_take_period(init: cst.FunctionDef | None, cls: cst.ClassDef) -> bool:
    """Whether a ModelCheckpoint subclass can be given, or reads, Keras 2's `period`."""
    if init is None:
        return True  # Its callers pass the base's arguments, period= among them.
    parameters = init.params
    if isinstance(parameters.star_arg, cst.Param) or parameters.star_kwarg is not None:
        return True
    if any(
        param.name.value == "period" for param in (*parameters.params, *parameters.kwonly_params)
    ):
        return True
    for attribute in ("period", "epochs_since_last_save"):
        if m.findall(cls, m.Attribute(value=m.Name("self"), attr=m.Name(attribute))):
            return True
    return False
