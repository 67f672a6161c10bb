# SPDX-License-Identifier: Apache-2.0
"""Rewrite or flag: Keras 2 model idioms whose meaning Keras 3 changed.

* `keras.utils.print_summary(model, ...)` -> `model.summary(...)` (the same
  printout; Keras 3 kept only the method);
* `compile(sample_weight_mode=...)` is gone (TypeError): `None` is dropped;
  `'temporal'` is dropped too, since Keras 3 takes per-timestep weights of
  shape (batch, steps) as they are;
* `model.add_loss(<tensor>)` on a functional model (the Keras 2 VAE idiom)
  raises NotImplementedError in Keras 3: flagged with the layer form;
* targets given as a dict keyed by output name to a model built with one
  output (the CTC idiom, `{'ctc': zeros}`) in `fit`: Keras 3 maps dict
  targets only onto models with dict or several outputs: flagged (batches a
  generator yields go through `parallel_keras.compat.named_batches`,
  rules/named_batches.py, which reads them by name as Keras 2 did);
* the Keras 2 GAN loop: Keras 2 froze `trainable` into each model when it was
  compiled, so `discriminator.trainable = False` between two compiles made
  the combined model train only the generator while the discriminator kept
  training on its own. Keras 3 reads `trainable` at every step: the same
  code trains the discriminator in the combined model too (or never, once
  it is left False). Flagged where a model is compiled after a `trainable`
  change that followed another compile.

* `model.outputs = [model.layers[i].output ...]` (Keras 2 let a script
  point a built model at other outputs, then call it): Keras 3's `outputs`
  has no setter (AttributeError). Rewritten to `model =
  keras.Model(model.inputs, [...], name=model.name)`, the same layers and
  weights giving those outputs when called. Only where the new outputs are
  read from layers (`.output`, `.get_layer`), so a class's own `self.outputs
  = []` stays as it is.

Neither of the last two is flagged on a `multi_gpu_model` result: the
parallel model accepts dict targets and freezes `trainable` at compile, as
Keras 2 did.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "model API"

_PRINT_SUMMARY = frozenset(
    {
        "keras.utils.print_summary",
        "keras.utils.layer_utils.print_summary",
        "keras.utils.vis_utils.print_summary",
    }
)
_PRINT_SUMMARY_SIGNATURE = ("model", "line_length", "positions", "print_fn")


def _trainable_action(frozen: str, combined: str) -> str:
    return (
        "Keras 2 froze `trainable` at compile; Keras 3 reads it at every train step. "
        "With parallel_keras.multi_gpu_model / ParallelModel the Keras 2 behaviour "
        "is kept (trainable is frozen when the parallel model is compiled). On a "
        f"plain Keras 3 model, set the flag before each step instead: `{frozen}.trainable "
        f"= True` before {frozen}.train_on_batch(...), `{frozen}.trainable = False` "
        f"before {combined}.train_on_batch(...)."
    )


_ADD_LOSS_ACTION = (
    "Keras 3 functional models cannot add a loss computed from symbolic tensors "
    "(NotImplementedError). Compute it in a layer: class LossLayer(keras.layers.Layer) "
    "whose call(self, inputs) does self.add_loss(<the same expression of inputs>) and "
    "returns inputs[0]; call it on the tensors the loss reads and use its output in "
    "the model, then compile without that loss."
)


_DICT_ACTION = (
    "give the target array itself (the dict's one value): plain Keras 3 matches a "
    "dict of targets only to a model with several or dict outputs and fails with "
    "\"Expected float32, but got <name> of type 'str'\" (parallel_keras's parallel "
    "model accepts the dict as Keras 2 did)."
)


def _reads_layer_outputs(node: cst.CSTNode) -> bool:
    """Whether `node` reads a layer's `.output` / `.get_output_at` / `get_layer`."""
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, attribute):
            nonlocal found
            found |= attribute.attr.value in ("output", "get_output_at", "get_layer")

    node.visit(_Find())
    return found


def _single_key(node: cst.CSTNode | None) -> str | None:
    """K for a dict literal `{'K': value}` with one string key."""
    if not isinstance(node, cst.Dict) or len(node.elements) != 1:
        return None
    element = node.elements[0]
    if isinstance(element, cst.DictElement):
        return syntax.string_value(element.key)
    return None


class ModelApiRule(context.Rule):
    """`print_summary(m)` -> `m.summary()`; flags the Keras 2 idioms Keras 3 reads differently."""

    name = RULE
    reads = {"symbolic_loss_calls": context.Phase.REWRITE}

    def __init__(self):
        self._compiled: set[str] = set()  # models compiled so far (source order)
        self._frozen_after_compile: set[str] = set()
        self._flag_compiles: dict[int, tuple[str, ...]] = {}  # compile -> frozen models
        self._single_output: set[str] = set()  # names of models built with one output
        self._single_loss_keys: set[str] = set()  # K of compile(loss={K: ...})
        # Names bound to a multi_gpu_model result: the parallel model keeps Keras
        # 2's trainable-at-compile and accepts dict targets, so neither is flagged.
        self._parallel: set[str] = set()

    # -- Scan -----------------------------------------------------------------

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call) and (
            ctx.qualified_name(node.value.func) or ""
        ).endswith(".multi_gpu_model"):
            for target in node.targets:
                self._parallel.add(syntax.code(target.target))
        for target in node.targets:
            if (
                isinstance(target.target, cst.Attribute)
                and target.target.attr.value == "trainable"
                and syntax.code(target.target.value) in self._compiled
            ):
                self._frozen_after_compile.add(syntax.code(target.target.value))
            if isinstance(target.target, cst.Name) and isinstance(node.value, cst.Call):
                qualified = ctx.qualified_name(node.value.func) or ""
                if qualified in ("keras.Model", "keras.models.Model"):
                    outputs = syntax.keyword(node.value, "outputs") or syntax.keyword(
                        node.value, "output"
                    )
                    positional = syntax.positional(node.value)
                    value = (
                        outputs.value
                        if outputs
                        else (positional[1].value if len(positional) > 1 else None)
                    )
                    if value is not None and not isinstance(value, (cst.List, cst.Tuple, cst.Dict)):
                        self._single_output.add(target.target.value)
                    else:
                        self._single_output.discard(target.target.value)

    def visit_Call(self, ctx, node):
        if syntax.method_name(node) != "compile":
            return
        model = syntax.code(node.func.value)
        loss = syntax.keyword(node, "loss")
        key = _single_key(loss.value) if loss is not None else None
        if key is not None and model not in self._parallel:
            self._single_loss_keys.add(key)
        if not (
            syntax.keyword(node, "loss")
            or syntax.keyword(node, "optimizer")
            or syntax.positional(node)
        ):
            return
        # A model recompiled after its own sub-model changed (fine-tuning)
        # means the same in Keras 2 and 3; another model compiled while a
        # compiled one is frozen is the GAN idiom.
        if (
            self._frozen_after_compile
            and model not in self._frozen_after_compile
            and model not in self._parallel
        ):
            self._flag_compiles[id(node)] = tuple(sorted(self._frozen_after_compile))
        self._frozen_after_compile = set()
        self._compiled.add(model)

    # -- Rewrite --------------------------------------------------------------

    def leave_ImportFrom(self, ctx, original, updated):
        if isinstance(updated.names, cst.ImportStar) or updated.module is None:
            return updated
        module = syntax.canonical_name(syntax.dotted(updated.module))
        kept = [
            alias
            for alias in updated.names
            if f"{module}.{syntax.dotted(alias.name)}" not in _PRINT_SUMMARY
            or alias.asname is not None
        ]
        if len(kept) == len(updated.names):
            return updated
        ctx.change(
            original,
            RULE,
            "removed the import of `print_summary` (Keras 3 has only model.summary(), used below)",
        )
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(names=kept)

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        if qualified in _PRINT_SUMMARY:
            return self._print_summary(ctx, original, updated)
        method = syntax.method_name(original)
        if method == "compile":
            if id(original) in self._flag_compiles:
                frozen = self._flag_compiles[id(original)]
                combined = syntax.code(original.func.value)
                ctx.flag(
                    original,
                    RULE,
                    f"`{combined}` is compiled after "
                    f"{', '.join(f'`{name}`' for name in frozen)} was compiled and its "
                    "`trainable` changed (the Keras 2 GAN idiom)",
                    _trainable_action(frozen[0], combined),
                )
            return self._compile(ctx, original, updated)
        if method == "add_loss":
            owner = original.func.value
            inputs = syntax.keyword(updated, "inputs")
            if inputs is not None and not syntax.has_star(updated):
                # Keras 2 used `inputs=` only to mark the loss conditional on
                # those inputs for its graph bookkeeping; Keras 3 rejects it.
                ctx.change(
                    original,
                    RULE,
                    "removed `add_loss(..., inputs=...)`: Keras 3's "
                    "add_loss takes the loss only (TypeError otherwise)",
                )
                updated = syntax.remove_args(updated, [inputs])
            # Inside a layer, `self.add_loss(...)` is the Keras 3 form itself;
            # a model's symbolic loss runs through a compatibility path
            # (rules/symbolic_losses.py), which records the call as handled.
            handled = id(original) in ctx.facts.symbolic_loss_calls
            if not handled and not (isinstance(owner, cst.Name) and owner.value == "self"):
                ctx.flag(
                    original,
                    RULE,
                    "`add_loss` on a model with a tensor (Keras 2 functional idiom)",
                    _ADD_LOSS_ACTION,
                )
            return updated
        if method in ("fit", "train_on_batch", "evaluate", "test_on_batch"):
            self._dict_targets(ctx, original)
        return updated

    def leave_Assign(self, ctx, original, updated):
        if len(updated.targets) != 1:
            return updated
        target = updated.targets[0].target
        if not (
            isinstance(target, cst.Attribute)
            and target.attr.value == "outputs"
            and isinstance(target.value, (cst.Name, cst.Attribute))
            and not (isinstance(target.value, cst.Name) and target.value.value == "self")
            and _reads_layer_outputs(updated.value)
        ):
            return updated
        owner = syntax.code(target.value)
        keras_name = ctx.keras_module()
        ctx.change(
            original,
            RULE,
            f"`{owner}.outputs = ...` -> `{owner} = {keras_name}.Model({owner}.inputs, ..., "
            f"name={owner}.name)`: Keras 3 models have no `outputs` setter; the new model "
            "shares the layers and weights and gives those outputs when called",
        )
        model = cst.Call(
            func=syntax.expression(f"{keras_name}.Model"),
            args=[
                cst.Arg(
                    syntax.expression(f"{owner}.inputs"),
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                ),
                cst.Arg(updated.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                syntax.make_arg("name", syntax.expression(f"{owner}.name")),
            ],
        )
        return updated.with_changes(
            targets=[updated.targets[0].with_changes(target=target.value)], value=model
        )

    def _dict_targets(self, ctx, call):
        owner = call.func.value
        targets = syntax.keyword(call, "y")
        positional = syntax.positional(call)
        value = targets.value if targets else (positional[1].value if len(positional) > 1 else None)
        if value is not None and _single_key(value) in self._single_loss_keys:
            ctx.flag(
                call,
                RULE,
                "targets given as a dict by output name to a model with one output",
                _DICT_ACTION,
            )
            return
        if not isinstance(owner, cst.Name) or owner.value not in self._single_output:
            return
        targets = syntax.keyword(call, "y")
        positional = syntax.positional(call)
        value = targets.value if targets else (positional[1].value if len(positional) > 1 else None)
        if isinstance(value, cst.Dict):
            ctx.flag(
                call,
                RULE,
                f"targets given as a dict by output name to `{owner.value}`, which has one output",
                _DICT_ACTION,
            )

    def _print_summary(self, ctx, original, updated):
        if (
            syntax.has_star(updated)
            or not syntax.positional(updated)
            and not syntax.keyword(updated, "model")
        ):
            return updated
        updated, _ = syntax.keywordize(updated, _PRINT_SUMMARY_SIGNATURE)
        model = syntax.keyword(updated, "model") or syntax.positional(updated)[0]
        rest = [arg for arg in updated.args if arg is not model]
        if rest:
            rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ctx.change(
            original,
            RULE,
            "`print_summary(model)` -> `model.summary()` (Keras 3 removed print_summary)",
        )
        return cst.Call(func=cst.Attribute(value=model.value, attr=cst.Name("summary")), args=rest)

    def _compile(self, ctx, original, updated):
        mode = syntax.keyword(updated, "sample_weight_mode")
        if mode is None:
            return updated
        value = mode.value
        if syntax.dotted(value) == "None" or (
            isinstance(value, cst.SimpleString) and value.evaluated_value == "temporal"
        ):
            ctx.change(
                original,
                RULE,
                f"removed `sample_weight_mode={syntax.code(value)}`: "
                "Keras 3 rejects it and takes (batch, steps) sample weights as "
                "temporal weights by their shape",
            )
            return syntax.remove_args(updated, [mode])
        ctx.flag(
            original,
            RULE,
            "`sample_weight_mode=` does not exist in Keras 3",
            "remove it; Keras 3 reads temporal weights from the shape of "
            "sample_weight (batch, steps).",
        )
        return updated


AUDIT = [
    ("keras.utils.print_summary(model, ...)", "model.summary(...)", "Keras 3 has only the method"),
    (
        "compile(sample_weight_mode=None | 'temporal')",
        "(removed)",
        "Keras 3 rejects it; (batch, steps) sample weights are temporal by shape",
    ),
    ("compile(sample_weight_mode=<computed>)", None, "remove it (Keras 3 rejects it)"),
    (
        "self.add_loss(loss, inputs=...)",
        "self.add_loss(loss)",
        "Keras 3's add_loss takes the loss only",
    ),
    ("fit/train_on_batch(y={'output_name': y}) on a one-output model", None, _DICT_ACTION),
    (
        "d.trainable = ... after d.compile(), then gan.compile() (GAN)",
        None,
        _trainable_action("d", "gan"),
    ),
]
