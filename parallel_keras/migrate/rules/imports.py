"""Rewrite: Keras 1/2 module paths that no longer exist in Keras 3.

Keras 2 scripts import from implementation modules (`keras.layers.merge`,
`keras.engine.topology`, `keras.utils.np_utils`,
`keras.backend.tensorflow_backend`, ...). Keras 3 exports the same names
from the public packages, and the old modules fail at import, before any
rewrite of their uses could help. The TF1 session helpers of the TensorFlow
backend (`set_session`, `get_session`, `_get_available_gpus`) are dropped
from the import: the sessions and GPU-count rules rewrite their uses.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context
from parallel_keras.migrate import syntax

RULE = "imports"

# Legacy module (canonical spelling) -> the Keras 3 module holding its names.
MOVED_MODULES = {
    "keras.layers.merge": "keras.layers",
    "keras.layers.advanced_activations": "keras.layers",
    "keras.layers.core": "keras.layers",
    "keras.layers.convolutional": "keras.layers",
    "keras.layers.pooling": "keras.layers",
    "keras.layers.normalization": "keras.layers",
    "keras.layers.recurrent": "keras.layers",
    "keras.layers.embeddings": "keras.layers",
    "keras.layers.wrappers": "keras.layers",
    "keras.layers.noise": "keras.layers",
    "keras.engine": "keras.layers",
    "keras.engine.topology": "keras.layers",
    "keras.engine.base_layer": "keras.layers",
    "keras.engine.input_layer": "keras.layers",
    "keras.engine.training": "keras.models",
    "keras.utils.np_utils": "keras.utils",
    "keras.utils.generic_utils": "keras.utils",
    "keras.utils.data_utils": "keras.utils",
    "keras.utils.vis_utils": "keras.utils",
    "keras.utils.layer_utils": "keras.utils",
    "keras.backend.tensorflow_backend": "keras.backend",
}
# Names that live elsewhere than their module's new home.
_NAME_HOMES = {
    "Model": "keras.models",
    "Sequential": "keras.models",
    "get_source_inputs": "keras.utils",
}
# Names removed with TF1 sessions; their uses are rewritten by other rules.
DROPPED_NAMES = frozenset({"set_session", "get_session", "_get_available_gpus"})


def _moved(module: str | None) -> str | None:
    return MOVED_MODULES.get(syntax.canonical_name(module) or "")


def _split(module: str) -> tuple[str, str]:
    parent, _, last = module.rpartition(".")
    return parent, last


def _alias_name(alias: cst.ImportAlias) -> str:
    return alias.asname.name.value if alias.asname else syntax.dotted(alias.name)


class ImportPathRule(context.Rule):
    """`from keras.layers.merge import concatenate` -> `from keras.layers import concatenate`."""

    name = RULE

    def __init__(self):
        self._in_imports: set[int] = set()

    def visit_ImportFrom(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def visit_Import(self, ctx, node):
        self._in_imports.update(id(n) for n in m.findall(node, m.Attribute()))

    def leave_SimpleStatementLine(self, ctx, original, updated):
        if len(updated.body) != 1:
            return updated
        statement = updated.body[0]
        if isinstance(statement, cst.ImportFrom):
            new = self._import_from(ctx, original, statement)
        elif isinstance(statement, cst.Import):
            new = self._import(ctx, original, statement)
        else:
            return updated
        if new is None:
            return updated
        if not new:
            return cst.RemoveFromParent()
        lines = [cst.SimpleStatementLine(body=[small]) for small in new]
        lines[0] = lines[0].with_changes(
            leading_lines=updated.leading_lines,
            trailing_whitespace=updated.trailing_whitespace,
        )
        return cst.FlattenSentinel(lines) if len(lines) > 1 else lines[0]

    def _import_from(self, ctx, line, statement):
        if statement.relative or statement.module is None:
            return None
        if isinstance(statement.names, cst.ImportStar):
            return None
        old_module = syntax.dotted(statement.module)
        target = _moved(old_module)
        if target is not None:
            return self._names_from_moved(ctx, line, statement, old_module, target)
        # `from keras.backend import tensorflow_backend as KTF`: a moved module
        # imported by name becomes its new module under the same local name.
        moved = [
            alias for alias in statement.names
            if _moved(f"{old_module}.{syntax.dotted(alias.name)}") is not None
        ]
        if not moved:
            return None
        kept = [alias for alias in statement.names if alias not in moved]
        new = []
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new.append(statement.with_changes(names=kept))
        for alias in moved:
            full = f"{old_module}.{syntax.dotted(alias.name)}"
            parent, last = _split(_moved(full))
            local = _alias_name(alias)
            new.append(cst.ImportFrom(
                module=syntax.expression(parent),
                names=[cst.ImportAlias(
                    name=cst.Name(last),
                    asname=None if local == last else cst.AsName(name=cst.Name(local)),
                )],
            ))
            ctx.change(
                line, RULE,
                f"`from {old_module} import {syntax.dotted(alias.name)}` -> "
                f"`from {parent} import {last}`: the module does not exist in Keras 3",
            )
        return new

    def _names_from_moved(self, ctx, line, statement, old_module, target):
        groups: dict[str, list[cst.ImportAlias]] = {}
        dropped = []
        for alias in statement.names:
            name = syntax.dotted(alias.name)
            if name in DROPPED_NAMES:
                dropped.append(name)
                continue
            home = _NAME_HOMES.get(name, target)
            groups.setdefault(home, []).append(
                alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            )
        new = []
        for home, aliases in groups.items():
            aliases = [
                alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for alias in aliases[:-1]
            ] + aliases[-1:]
            new.append(cst.ImportFrom(module=syntax.expression(home), names=aliases))
        message = f"`from {old_module} import ...` -> "
        message += ", ".join(f"`from {home} import ...`" for home in groups) or "removed"
        message += ": the module does not exist in Keras 3"
        if dropped:
            message += (
                f"; dropped {', '.join(dropped)} (TF1 session helpers; their "
                "uses are rewritten or flagged)"
            )
        ctx.change(line, RULE, message)
        return new

    def _import(self, ctx, line, statement):
        names = list(statement.names)
        touched = False
        for index, alias in enumerate(names):
            full = syntax.dotted(alias.name)
            target = _moved(full)
            if target is None:
                continue
            touched = True
            # Without an alias, uses spell the legacy path; they are
            # rewritten below, and the new import binds the same root.
            names[index] = alias.with_changes(name=syntax.expression(target))
            ctx.change(
                line, RULE,
                f"`import {full}` -> `import {target}`: the module does not exist in Keras 3",
            )
        if not touched:
            return None
        return [statement.with_changes(names=names)]

    def leave_Attribute(self, ctx, original, updated):
        # `keras.utils.np_utils.to_categorical` -> `keras.utils.to_categorical`.
        text = syntax.dotted(original)
        if id(original) in self._in_imports:
            return updated
        if text is None or not isinstance(original.value, cst.Attribute):
            return updated
        module_text = syntax.dotted(original.value)
        target = _moved(module_text)
        if target is None or not module_text.startswith(("keras.", "tf.keras.", "tensorflow.keras.")):
            return updated
        if original.attr.value in DROPPED_NAMES:
            return updated
        ctx.change(
            original, RULE,
            f"`{text}` -> `{target}.{original.attr.value}`: the module does not exist in Keras 3",
        )
        return syntax.expression(f"{target}.{original.attr.value}")
