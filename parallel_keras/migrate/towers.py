# SPDX-License-Identifier: Apache-2.0
"""A project's own multi-GPU code, recognised by what it does, not its name.

Keras 2 projects that predate `multi_gpu_model` (or wanted their own) wrote
the same thing under many names: Matterport's `ParallelModel(keras.Model)`,
the widely copied `make_parallel(model, gpu_count)`, a vendored copy of
Keras 2's `multi_gpu_model`. Each builds one tower per GPU in a loop, under
`tf.device('/gpu:%d' % i)` (or an f-string, `.format`, `'/gpu:' + str(i)`,
or a device from a list), slices the batch for each tower (a `Lambda` with a
slice function, `get_slice`, `tf.split`) and concatenates the towers'
outputs (`concatenate`, `Concatenate`, `merge(mode='concat')`). That is
`multi_gpu_model`, whatever its name: `find_tower_builders` finds them (parse
only, with `ast`), so the callers can get `parallel_keras.multi_gpu_model`
with the right `gpus`, and the towers' device scopes are left alone.
"""

from __future__ import annotations

import ast
import dataclasses

_SLICERS = frozenset({"Lambda", "get_slice", "split", "slice", "slice_batch", "gather"})
_CONCATENATORS = frozenset({"concatenate", "Concatenate", "concat"})


@dataclasses.dataclass(frozen=True)
class TowerBuilder:
    """A function or class of the project that is Keras 2's multi_gpu_model.

    Args:
        name: The function's or class's name.
        parameters: Its call's parameters, in order (`self` left out).
        model: The parameter that holds the template model.
        gpus: The parameter that holds the GPU count or the list of GPUs
            (ids or device names, both of which `multi_gpu_model` takes), or
            None when the count is a module-level name (`gpus_name`).
        gpus_name: The module-level name the tower loop counts to, when no
            parameter gives it. Defaults to None.
        gpus_default: The source of the `gpus` parameter's default value,
            or None when it has none. Defaults to None.
    """

    name: str
    parameters: tuple[str, ...]
    model: str
    gpus: str | None
    gpus_name: str | None = None
    gpus_default: str | None = None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _names(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _mentions_gpu(node: ast.AST) -> bool:
    return any(
        isinstance(child, ast.Constant)
        and isinstance(child.value, str)
        and "gpu" in child.value.lower()
        for child in ast.walk(node)
    )


def _targets(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _tower_loops(scope: ast.AST) -> list[ast.For]:
    """`for` loops whose body enters `device(...)` for a GPU the loop picks."""
    loops = []
    for loop in ast.walk(scope):
        if not isinstance(loop, ast.For):
            continue
        loop_names = _targets(loop.target)
        for inner in ast.walk(loop):
            if not isinstance(inner, (ast.With, ast.AsyncWith)):
                continue
            for item in inner.items:
                call = item.context_expr
                if not (isinstance(call, ast.Call) and _last_name(call.func) == "device"):
                    continue
                argument = call.args[0] if call.args else None
                if argument is None:
                    continue
                if _mentions_gpu(argument) or _names(argument) & loop_names:
                    loops.append(loop)
                    break
            else:
                continue
            break
    return loops


def _slices_and_concatenates(scope: ast.AST) -> bool:
    slices = concatenates = False
    for call in ast.walk(scope):
        if not isinstance(call, ast.Call):
            continue
        name = _last_name(call.func) or ""
        if name in _SLICERS or "slice" in name.lower():
            slices = True
        if name in _CONCATENATORS or (
            name == "merge"
            and any(
                keyword.arg == "mode"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value == "concat"
                for keyword in call.keywords
            )
        ):
            concatenates = True
    return slices and concatenates


def _parameters(function: ast.FunctionDef, method: bool) -> list[str]:
    names = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]
    return names[1:] if method else names


def _assignments(scope: ast.AST) -> dict[str, ast.AST]:
    """`name = value` and `self.name = value` in `scope` (last one wins)."""
    values: dict[str, ast.AST] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = node.value
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                values["self." + target.attr] = node.value
    return values


def _count_source(
    loop: ast.For, parameters: list[str], values: dict[str, ast.AST], module_names: set[str]
) -> tuple[str | None, str | None]:
    """(parameter, module-level name) the tower loop's count comes from."""
    iterable: ast.AST = loop.iter
    for _ in range(4):  # Follows `n = len(gpus)`, `self.gpu_count = gpu_count`, ...
        if isinstance(iterable, ast.Call) and _last_name(iterable.func) in (
            "range",
            "enumerate",
            "len",
        ):
            if not iterable.args:
                return None, None
            iterable = (
                iterable.args[-1] if _last_name(iterable.func) == "range" else iterable.args[0]
            )
            continue
        key = None
        if isinstance(iterable, ast.Name):
            key = iterable.id
        elif (
            isinstance(iterable, ast.Attribute)
            and isinstance(iterable.value, ast.Name)
            and iterable.value.id == "self"
        ):
            key = "self." + iterable.attr
        if key in parameters:
            return key, None
        if key is not None and key in values:
            iterable = values[key]
            continue
        if key in module_names:
            return None, key
        return None, None
    return None, None


def _builder(
    name: str, scope: ast.AST, init: ast.FunctionDef, method: bool, module_names: set[str]
) -> TowerBuilder | None:
    loops = _tower_loops(scope)
    if not loops or not _slices_and_concatenates(scope):
        return None
    parameters = _parameters(init, method)
    values = _assignments(scope)
    gpus, gpus_name = _count_source(loops[0], parameters, values, module_names)
    if gpus is None and gpus_name is None:
        return None
    models = [parameter for parameter in parameters if parameter != gpus]
    if not models:
        return None
    return TowerBuilder(name, tuple(parameters), models[0], gpus, gpus_name, _default(init, gpus))


def _default(function: ast.FunctionDef, parameter: str | None) -> str | None:
    positional = [*function.args.posonlyargs, *function.args.args]
    defaults = function.args.defaults
    for arg, default in zip(positional[len(positional) - len(defaults) :], defaults):
        if arg.arg == parameter:
            return ast.unparse(default)
    return None


def find_tower_builders(tree: ast.Module) -> dict[str, TowerBuilder]:
    """The module-level functions and classes of `tree` that are multi_gpu_model.

    Args:
        tree: A parsed module.

    Returns:
        Name -> what its call's arguments mean.
    """
    module_names = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            module_names |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
    builders = {}
    for statement in tree.body:
        found = None
        if isinstance(statement, ast.FunctionDef):
            found = _builder(statement.name, statement, statement, False, module_names)
        elif isinstance(statement, ast.ClassDef):
            init = next(
                (
                    item
                    for item in statement.body
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__"
                ),
                None,
            )
            if init is not None:
                found = _builder(statement.name, statement, init, True, module_names)
        if found is not None:
            builders[found.name] = found
    return builders


def tower_scopes(tree: ast.Module) -> set[int]:
    """Line numbers of the `with` statements inside the project's multi-GPU code.

    That is every tower builder, and a module-level `def multi_gpu_model`
    whatever its body (a vendored copy of Keras 2's, perhaps trimmed).
    """
    lines = set()
    builders = set(find_tower_builders(tree)) | {"multi_gpu_model"}
    for statement in tree.body:
        if getattr(statement, "name", None) in builders:
            for node in ast.walk(statement):
                if isinstance(node, (ast.With, ast.AsyncWith)):
                    lines.add(node.lineno)
    return lines
