# SPDX-License-Identifier: Apache-2.0
"""Rewrite: Keras 2's `@interfaces.legacy_*_support` decorators -> removed.

Layers copied from Keras 2's own source (spectral-normalised convolutions,
custom Dense variants) kept `from keras.legacy import interfaces` and
decorated `__init__` with `@interfaces.legacy_dense_support`: the decorator
only renamed Keras 1 arguments (`output_dim=`, `init=`) to Keras 2's and
warned. Keras 3 has no `keras.legacy.interfaces`; without the decorator the
layer takes Keras 2's arguments as it did, so the decorators go, and the
import with them when nothing else reads it (`imports.py` drops it). A
module that uses `interfaces` otherwise keeps the import, flagged.
"""

from __future__ import annotations

import collections

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "legacy interfaces"

AUDIT: list[tuple[str, str | None, str]] = [
    (
        "@interfaces.legacy_*_support (keras.legacy.interfaces)",
        "(removed, with the import)",
        "it only renamed Keras 1 arguments to Keras 2's; Keras 3 has no keras.legacy",
    ),
]


def _decorator_of(decorator: cst.Decorator, local: str) -> bool:
    target = decorator.decorator
    if isinstance(target, cst.Call):
        target = target.func
    return (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == local
        and target.attr.value.startswith("legacy_")
    )


class LegacyInterfacesRule(context.Rule):
    """`@interfaces.legacy_dense_support` -> removed; `from keras.legacy import interfaces` too."""

    name = RULE
    writes = {
        "unused_legacy_interfaces": context.Phase.FINISH_SCAN,
        "removed_decorators": context.Phase.FINISH_SCAN,
    }

    def __init__(self):
        self._imports: dict[int, str] = {}  # import line -> local name
        self._uses: collections.Counter = collections.Counter()
        self._decorators: collections.Counter = collections.Counter()
        self._attributes: dict[str, list[int]] = collections.defaultdict(list)
        self._removable: set[str] = set()

    def visit_SimpleStatementLine(self, ctx, node):
        if len(node.body) != 1 or not isinstance(node.body[0], cst.ImportFrom):
            return
        statement = node.body[0]
        if (
            statement.module is not None
            and not statement.relative
            and syntax.dotted(statement.module) == "keras.legacy"
            and not isinstance(statement.names, cst.ImportStar)
            and [syntax.dotted(alias.name) for alias in statement.names] == ["interfaces"]
        ):
            alias = statement.names[0]
            self._imports[id(node)] = alias.evaluated_alias or "interfaces"

    def visit_Name(self, ctx, node):
        self._uses[node.value] += 1

    def visit_Decorator(self, ctx, node):
        for local in set(self._imports.values()):
            if _decorator_of(node, local):
                self._decorators[local] += 1
                self._attributes[local] += [
                    id(attribute) for attribute in syntax.findall(node, cst.Attribute)
                ]

    def finish_scan(self, ctx):
        locals_ = set(self._imports.values())
        imports = collections.Counter(self._imports.values())
        # Each import line names it once (`interfaces`); the rest must be decorators.
        removable = {
            local
            for local in locals_
            if self._uses[local] == imports[local] + self._decorators[local]
        }
        ctx.facts.unused_legacy_interfaces.update(
            line for line, local in self._imports.items() if local in removable
        )
        self._removable = removable
        # The imports rule leaves the decorators' names to this one.
        ctx.facts.removed_decorators.update(
            attribute for local in removable for attribute in self._attributes[local]
        )

    def leave_FunctionDef(self, ctx, original, updated):
        removable = self._removable
        kept = [
            d for d in updated.decorators if not any(_decorator_of(d, local) for local in removable)
        ]
        if len(kept) == len(updated.decorators):
            return updated
        ctx.change(
            original,
            RULE,
            f"removed `@interfaces.legacy_*` from `{original.name.value}`: it only renamed "
            "Keras 1 arguments to Keras 2's; Keras 3 has no keras.legacy",
        )
        return updated.with_changes(decorators=kept)
