# SPDX-License-Identifier: Apache-2.0
"""Rewrite or flag: Keras 2 layers and layer code that Keras 3 rejects.

* `CuDNNLSTM` / `CuDNNGRU` -> `LSTM` / `GRU`. Keras 2.3's cuDNN layers were
  the plain layers with cuDNN's fixed choices: tanh, a sigmoid recurrent
  activation and, for GRU, the reset gate after the matrix product. Keras 3's
  LSTM and GRU use cuDNN themselves when given exactly those, so the calls
  pass `recurrent_activation='sigmoid'` (and `reset_after=True`) explicitly;
  every other CuDNN argument has the same name in Keras 3. A class chosen in
  a GPU-count branch (`CuDNNLSTM if gpus else LSTM`) is renamed too. Loading
  weights a CuDNN layer saved is the runtime's part (the bias layouts differ).
* Layer names containing `/` (Keras 3 raises ValueError): a literal name is
  rewritten with `_` for `/`, together with every `get_layer` literal of the
  same name in the file; a computed name holding a `/` is flagged.
* `self.trainable_weights = [...]`, `+= [...]`, `.append(w)` in a custom layer
  (and Keras 2's private `self._trainable_weights`): Keras 3 has no setter
  (AttributeError) and returns a fresh list, so an append silently changes
  nothing. Removed when every listed weight was created by `self.add_weight`
  in the class (Keras 3 tracks those already), else flagged.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "layers"

_CUDNN = {
    "CuDNNLSTM": ("LSTM", (("recurrent_activation", "'sigmoid'"),)),
    "CuDNNGRU": ("GRU", (("recurrent_activation", "'sigmoid'"), ("reset_after", "True"))),
}
_CUDNN_MODULES = frozenset(
    {
        "keras.layers",
        "keras.layers.cudnn_recurrent",
        "keras.compat.v1.layers",
        "keras.layers.recurrent",
    }
)


# Keras 3's conv layers (BaseConv) whose `kernel` is a read-only property.
_CONV_CLASSES = frozenset(
    "Conv1D Conv2D Conv3D Conv1DTranspose Conv2DTranspose Conv3DTranspose "
    "Convolution1D Convolution2D Convolution3D Convolution2DTranspose "
    "Convolution3DTranspose Deconvolution2D Deconvolution3D".split()
)
# Keras 3 layers whose weights are read-only properties over a private
# variable (checked in Keras 3.5-3.15): the attribute a Keras 2 subclass
# assigned in its build -> the variable behind it.
_READ_ONLY_WEIGHTS = {
    **{name: {"kernel": "_kernel"} for name in _CONV_CLASSES},
    "Dense": {"kernel": "_kernel"},
    "Embedding": {"embeddings": "_embeddings"},
}
# Keras 3 layers that save only their kernel and bias (their quantization
# layout) but load-check every variable: a subclass adding its own weight
# writes files it cannot read back unless it saves as keras.layers.Layer does.
_KERAS2_WEIGHTS = "parallel_keras.compat.Keras2Weights"
_PARTIAL_SAVERS = frozenset({*_READ_ONLY_WEIGHTS, "EinsumDense"})


def _cudnn(ctx: context.Context, node: cst.CSTNode) -> str | None:
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None  # `CuDNNLSTM(64)(x)`: the outer call is the layer's use.
    qualified = ctx.qualified_name(node) or ""
    module, _, name = qualified.rpartition(".")
    if name in _CUDNN and module in _CUDNN_MODULES:
        return name
    return None


def _is_layer_call(ctx: context.Context, call: cst.Call) -> bool:
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    qualified = ctx.qualified_name(call.func) or ""
    return qualified.startswith(
        ("keras.layers.", "keras.models.", "keras.Model", "keras.Sequential", "keras.Input")
    )


def _literal_slash(node: cst.CSTNode) -> bool:
    """Whether `node` is a str literal holding `/` (a bytes literal is no layer name)."""
    value = syntax.string_value(node)
    return value is not None and "/" in value


def _has_slash_part(node: cst.CSTNode) -> bool:
    """Whether a computed name holds a literal `/` (f-string, `+`, `%`, `.format`)."""
    found = False

    class _Find(cst.CSTVisitor):
        def visit_SimpleString(self, string):
            nonlocal found
            found |= _literal_slash(string)

        def visit_FormattedStringText(self, text):
            nonlocal found
            found |= "/" in text.value

    node.visit(_Find())
    return found


class LayerApiRule(context.Rule):
    """`CuDNNLSTM(64)` -> `LSTM(64, recurrent_activation='sigmoid')`; `name='a/b'` -> `'a_b'`."""

    name = RULE

    def __init__(self):
        self._renamed: set[str] = set()  # layer names with `/`, literal
        self._class_weights: list[set[str]] = []  # per class: self.X = self.add_weight
        self._weights_by_class: dict[int, set[str]] = {}
        # A CuDNN import inside a function (`if gpus: from keras.layers import
        # CuDNNLSTM`) keeps its local name: `from keras.layers import LSTM`
        # there would make LSTM local to the whole function, and the
        # function's other `LSTM(...)` (the module's) an UnboundLocalError.
        self._local_imports: set[int] = set()
        # `self.kernel` in a subclass of a Keras conv layer -> its new name.
        self._conv_kernels: dict[int, str] = {}
        # Subclasses of a _PARTIAL_SAVERS layer that add their own weights.
        self._partial_savers: set[int] = set()
        self._kept_names: set[int] = set()

    # -- Scan -----------------------------------------------------------------

    def visit_FunctionDef(self, ctx, node):
        local = set()
        for statement in syntax.findall(node.body, cst.ImportFrom):
            if isinstance(statement.names, cst.ImportStar):
                continue
            names = {
                syntax.dotted(alias.name)
                for alias in statement.names
                if alias.asname is None and syntax.dotted(alias.name) in _CUDNN
            }
            if names:
                self._local_imports.add(id(statement))
                local |= names
        if local:
            self._kept_names.update(
                id(name) for name in syntax.findall(node.body, cst.Name) if name.value in local
            )

    def visit_ClassDef(self, ctx, node):
        created: set[str] = set()

        class _Weights(cst.CSTVisitor):
            def visit_Assign(self, assign):
                if (
                    isinstance(assign.value, cst.Call)
                    and syntax.method_name(assign.value) == "add_weight"
                ):
                    for target in assign.targets:
                        if isinstance(target.target, cst.Attribute):
                            created.add(syntax.code(target.target))

        node.visit(_Weights())
        self._weights_by_class[id(node)] = created
        bases = {(ctx.qualified_name(base.value) or "").rpartition(".")[::2] for base in node.bases}
        keras_bases = {name for module, name in bases if module in _CUDNN_MODULES}
        if created and keras_bases & _PARTIAL_SAVERS:
            self._partial_savers.add(id(node))
        renamed = {
            attribute: private
            for name in keras_bases & set(_READ_ONLY_WEIGHTS)
            for attribute, private in _READ_ONLY_WEIGHTS[name].items()
        }
        if renamed:
            stored = self._conv_kernels

            # Every `self.kernel` of the class: the property also refuses to be
            # read before `built` (a build that reads the kernel it just made).
            class _Kernels(cst.CSTVisitor):
                def visit_Attribute(self, value):
                    if (
                        isinstance(value, cst.Attribute)
                        and value.attr.value in renamed
                        and isinstance(value.value, cst.Name)
                        and value.value.value == "self"
                    ):
                        stored[id(value)] = renamed[value.attr.value]

            node.visit(_Kernels())

    def leave_ClassDef(self, ctx, original, updated):
        if id(original) not in self._partial_savers or any(
            syntax.code(base.value).endswith("Keras2Weights") for base in original.bases
        ):
            return updated
        ctx.require_import("parallel_keras.compat")
        ctx.compat(
            original,
            RULE,
            f"`class {original.name.value}(...)` adds its own weights to a Keras layer that "
            f"saves only its kernel and bias in Keras 3 -> first base `{_KERAS2_WEIGHTS}`: "
            "it saves and loads every weight, as Keras 2 did (else its files do not reload)",
            modern="override save_own_variables/load_own_variables, or derive from "
            "keras.layers.Layer",
        )
        first = cst.Arg(syntax.expression(_KERAS2_WEIGHTS))
        return updated.with_changes(bases=[first, *updated.bases])

    def visit_Call(self, ctx, node):
        name = syntax.keyword(node, "name")
        value = syntax.string_value(name.value) if name is not None else None
        if value is not None and "/" in value and _is_layer_call(ctx, node):
            self._renamed.add(value)

    # -- Rewrite --------------------------------------------------------------

    def leave_ImportFrom(self, ctx, original, updated):
        if isinstance(updated.names, cst.ImportStar):
            return updated
        module = syntax.canonical_name(syntax.dotted(updated.module)) if updated.module else ""
        if not any(syntax.dotted(a.name) in _CUDNN for a in original.names) or (
            module not in _CUDNN_MODULES
        ):
            return updated
        seen, kept = set(), []
        local = id(original) in self._local_imports
        for alias in updated.names:
            if syntax.dotted(alias.name) in _CUDNN:
                cudnn = syntax.dotted(alias.name)
                alias = alias.with_changes(
                    name=cst.Name(_CUDNN[cudnn][0])
                )  # `import LSTM, CuDNNLSTM` -> one LSTM.
                if local and alias.asname is None:
                    alias = alias.with_changes(
                        asname=cst.AsName(
                            whitespace_before_as=cst.SimpleWhitespace(" "),
                            whitespace_after_as=cst.SimpleWhitespace(" "),
                            name=cst.Name(cudnn),
                        )
                    )
            key = (syntax.dotted(alias.name), alias.asname.name.value if alias.asname else None)
            if key not in seen:
                seen.add(key)
                kept.append(alias)
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ctx.change(
            original,
            RULE,
            "imports CuDNNLSTM/CuDNNGRU as LSTM/GRU (Keras 3 "
            "has no CuDNN layers; LSTM/GRU use cuDNN themselves)",
        )
        if module == "keras.layers.cudnn_recurrent":
            return updated.with_changes(module=syntax.expression("keras.layers"), names=kept)
        return updated.with_changes(names=kept)

    def leave_Name(self, ctx, original, updated):
        if id(original) in self._kept_names:
            return updated
        if original.value in _CUDNN and _cudnn(ctx, original):
            return updated.with_changes(value=_CUDNN[original.value][0])
        return updated

    def leave_Attribute(self, ctx, original, updated):
        if id(original) in self._conv_kernels:
            private = self._conv_kernels[id(original)]
            public = original.attr.value
            ctx.change(
                original,
                RULE,
                f"`self.{public}` in a Keras layer subclass -> `self.{private}`: Keras 3 "
                f"reads `{public}` through a property (no setter, not readable before the "
                f"layer is built) that returns `{private}`",
            )
            return updated.with_changes(attr=cst.Name(private))
        if original.attr.value in _CUDNN and _cudnn(ctx, original):
            return updated.with_changes(attr=cst.Name(_CUDNN[original.attr.value][0]))
        return updated

    def leave_Call(self, ctx, original, updated):
        cudnn = _cudnn(ctx, original.func)
        if cudnn is not None:
            updated = self._cudnn_call(ctx, original, updated, cudnn)
        name = syntax.keyword(updated, "name")
        if name is not None and _is_layer_call(ctx, original):
            if _literal_slash(name.value):
                return self._rename(ctx, original, updated, name)
            if not isinstance(name.value, cst.SimpleString) and _has_slash_part(name.value):
                return self._rename_parts(ctx, original, updated, name)
        # `MyLayer(name=f'block/{i}')(x)`: a project's own class, called on
        # tensors right away, is a layer too.
        inner = updated.func
        # (`original.func` is a name where an earlier rule made the call's
        # function a call: `keras2_optimizer(RMSprop)(...)`.)
        if (
            isinstance(inner, cst.Call)
            and isinstance(original.func, cst.Call)
            and not _is_layer_call(ctx, original.func)
        ):
            inner_name = syntax.keyword(inner, "name")
            if inner_name is not None and _has_slash_part(inner_name.value):
                renamed = (
                    self._rename(ctx, original.func, inner, inner_name)
                    if _literal_slash(inner_name.value)
                    else self._rename_parts(ctx, original.func, inner, inner_name)
                )
                return updated.with_changes(func=renamed)
        if syntax.method_name(original) == "get_layer":
            arg = syntax.keyword(updated, "name") or (
                syntax.positional(updated)[0] if syntax.positional(updated) else None
            )
            if (
                arg is not None
                and isinstance(arg.value, cst.SimpleString)
                and (arg.value.evaluated_value in self._renamed)
            ):
                return self._rename(ctx, original, updated, arg)
        return updated

    def _rename(self, ctx, original, updated, arg):
        old = arg.value.evaluated_value
        new_value = arg.value.value.replace("/", "_")
        ctx.change(
            original,
            RULE,
            f"layer name {old!r} -> {old.replace('/', '_')!r}: Keras 3 refuses '/' in names",
        )
        return updated.with_changes(
            args=[
                a.with_changes(value=a.value.with_changes(value=new_value)) if a is arg else a
                for a in updated.args
            ]
        )

    def _rename_parts(self, ctx, original, updated, arg):
        """`name=f'cell_{i}/add'` -> `f'cell_{i}_add'`: '/' -> '_' in every literal part."""

        class _Slashes(cst.CSTTransformer):
            def leave_SimpleString(self, original_node, updated_node):
                if _literal_slash(updated_node):
                    return updated_node.with_changes(value=updated_node.value.replace("/", "_"))
                return updated_node

            def leave_FormattedStringText(self, original_node, updated_node):
                return updated_node.with_changes(value=updated_node.value.replace("/", "_"))

        value = arg.value.visit(_Slashes())
        ctx.change(
            original,
            RULE,
            f"layer name `{syntax.code(arg.value)}` -> `{syntax.code(value)}`: Keras 3 refuses "
            "'/' in names (the computed parts must hold none either)",
        )
        return updated.with_changes(
            args=[a.with_changes(value=value) if a is arg else a for a in updated.args]
        )

    def _cudnn_call(self, ctx, original, updated, cudnn):
        new, extra = _CUDNN[cudnn]
        args = list(updated.args)
        added = []
        if not syntax.has_star(updated):
            for keyword, value in extra:
                if syntax.keyword(updated, keyword) is None:
                    if args:
                        args[-1] = args[-1].with_changes(
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                        )
                    args.append(syntax.make_arg(keyword, syntax.expression(value)))
                    added.append(f"{keyword}={value}")
        ctx.change(
            original,
            RULE,
            f"`{cudnn}` -> `{new}` with {', '.join(added) or 'its'} "
            "cuDNN settings: the same computation, and Keras 3 runs it on cuDNN",
        )
        return updated.with_changes(args=args)

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(original.body) != 1:
            return updated
        found = _weight_list_update(original.body[0])
        if found is None:
            return updated
        attribute, items = found
        created = set().union(*self._weights_by_class.values()) if self._weights_by_class else set()
        listed = [syntax.code(item) for item in items] if items is not None else None
        if listed is not None and all(item in created for item in listed):
            ctx.change(
                original,
                RULE,
                f"removed the update of `self.{attribute}`: Keras 3 has "
                "no setter (and its list is a copy), and add_weight already tracks "
                "these weights",
            )
            return cst.RemoveFromParent()
        ctx.flag(
            original,
            RULE,
            f"`self.{attribute}` is updated by hand: Keras 3 layers have "
            "no setter, and appending to the list they return changes nothing (the "
            "weight would silently not train)",
            "create each weight with self.add_weight(...) in build (Keras 3 tracks "
            "it) and delete this line; for a sub-layer's weights, assign the "
            "sub-layer to an attribute of self.",
        )
        return updated


_WEIGHT_LISTS = frozenset(
    {"trainable_weights", "non_trainable_weights", "_trainable_weights", "_non_trainable_weights"}
)


def _weight_list(node: cst.CSTNode) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and node.attr.value in _WEIGHT_LISTS
    ):
        return node.attr.value
    return None


def _elements(node: cst.CSTNode) -> list[cst.BaseExpression] | None:
    if isinstance(node, (cst.List, cst.Tuple)):
        return [element.value for element in node.elements]
    return None


def _weight_list_update(statement):
    """(attribute, items or None if unknown) for `self.trainable_weights = / += / .append`."""
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        attribute = _weight_list(statement.targets[0].target)
        if attribute:
            return attribute, _elements(statement.value)
    if isinstance(statement, cst.AugAssign) and isinstance(statement.operator, cst.AddAssign):
        attribute = _weight_list(statement.target)
        if attribute:
            return attribute, _elements(statement.value)
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        call = statement.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("append", "extend"):
            attribute = _weight_list(call.func.value)
            if attribute and len(call.args) == 1 and not call.args[0].star:
                value = call.args[0].value
                return attribute, [value] if call.func.attr.value == "append" else _elements(value)
    return None


AUDIT = [
    (
        "keras.layers.CuDNNLSTM",
        "keras.layers.LSTM(..., recurrent_activation='sigmoid')",
        "Keras 2's CuDNNLSTM was LSTM with cuDNN's fixed settings; Keras 3 LSTM uses cuDNN",
    ),
    (
        "keras.layers.CuDNNGRU",
        "keras.layers.GRU(..., recurrent_activation='sigmoid', reset_after=True)",
        "Keras 2's CuDNNGRU was GRU with cuDNN's fixed settings; Keras 3 GRU uses cuDNN",
    ),
    (
        "layer name 'a/b' (literal)",
        "'a_b'",
        "Keras 3 refuses '/' in names; get_layer literals of the name follow",
    ),
    ("layer name with '/' (computed)", None, "build it with '_' instead of '/'"),
    (
        "self.kernel / self.embeddings in a Conv*/Dense/Embedding subclass",
        "self._kernel / self._embeddings",
        "Keras 3 reads them through a property with no setter",
    ),
    (
        "class X(Conv2D/Dense/Embedding/EinsumDense) that adds weights in build",
        f"class X({_KERAS2_WEIGHTS}, ...)",
        "Keras 3 saves only kernel and bias of these layers; the subclass saves all, as Keras 2",
        "override save_own_variables/load_own_variables, or derive from keras.layers.Layer",
    ),
    (
        "self.trainable_weights = / += / .append(...) (weights from add_weight)",
        "(removed)",
        "no setter in Keras 3; add_weight tracks them",
    ),
    (
        "self.trainable_weights / self._trainable_weights updated by hand (other)",
        None,
        "create weights with self.add_weight and delete the line",
    ),
]
