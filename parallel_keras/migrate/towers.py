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
        placement: Parameters that only say where the slices and the
            concatenation run (`ps_device`: given only to `tf.device`), which
            changes no value; multi_gpu_model places them itself. Keyword
            names a class pops from its `**kwargs` count as parameters too.
    """

    name: str
    parameters: tuple[str, ...]
    model: str
    gpus: str | None
    gpus_name: str | None = None
    gpus_default: str | None = None
    placement: tuple[str, ...] = ()


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
    names += [arg.arg for arg in function.args.kwonlyargs]
    names = names[1:] if method else names
    # `serial_model = kwargs.pop('serial_model')`: keyword parameters too.
    if function.args.kwarg is not None:
        found = [
            (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), key)
            for node in ast.walk(function)
            if (key := _kwargs_key(node, function.args.kwarg.arg)) is not None
        ]
        for _, _, key in sorted(found):
            if key not in names:
                names.append(key)
    return names


def _holders(parameter: str, values: dict[str, ast.AST]) -> set[str]:
    """The names holding a parameter's value: itself, `self._m = m`, `m = kwargs.pop('m')`."""
    holders = {parameter}
    for _ in range(4):
        more = {
            target
            for target, value in values.items()
            if (isinstance(value, ast.Name) and value.id in holders)
            or (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "self"
                and "self." + value.attr in holders
            )
            or _kwargs_key(value, None) == parameter
        }
        if more <= holders:
            break
        holders |= more
    return holders


def _model_parameter(scope: ast.AST, candidates: list[str]) -> str | None:
    """The candidate the towers call (`model(slices)`) or read inputs of; else the first."""
    values = _assignments(scope)
    for candidate in candidates:
        holders = _holders(candidate, values)
        for node in ast.walk(scope):
            used = None
            if isinstance(node, ast.Call):
                used = node.func
            elif isinstance(node, ast.Attribute) and node.attr in ("inputs", "outputs", "input"):
                used = node.value
            if used is not None and _holder(used, holders):
                return candidate
    return candidates[0] if candidates else None


def _kwargs_key(node: ast.AST, kwargs: str | None) -> str | None:
    """'k' of `kwargs.pop('k', ...)`, `kwargs.get('k')` or `kwargs['k']`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner, arguments = node.func.value, node.args
        if node.func.attr not in ("pop", "get"):
            return None
    elif isinstance(node, ast.Subscript):
        owner, arguments = node.value, [node.slice]
    else:
        return None
    if not (isinstance(owner, ast.Name) and (kwargs is None or owner.id == kwargs)):
        return None
    if arguments and isinstance(arguments[0], ast.Constant) and isinstance(arguments[0].value, str):
        return arguments[0].value
    return None


def _placement_parameters(scope: ast.AST, parameters: list[str]) -> tuple[str, ...]:
    """The parameters only given to `tf.device(...)` (or tested for None) in `scope`."""
    values = _assignments(scope)
    placement = []
    for parameter in parameters:
        holders = _holders(parameter, values)
        in_device = [
            argument
            for node in ast.walk(scope)
            if isinstance(node, ast.Call) and _last_name(node.func) == "device"
            for argument in node.args
        ]
        uses = sum(1 for argument in in_device if _holder(argument, holders))
        # Every read must be an argument of device() or a test against None.
        reads = [
            node
            for node in ast.walk(scope)
            if isinstance(node, (ast.Name, ast.Attribute))
            and _holder(node, holders)
            and isinstance(node.ctx, ast.Load)
        ]
        allowed = {id(argument) for argument in in_device} | {
            id(node.left)
            for node in ast.walk(scope)
            if isinstance(node, ast.Compare)
            and all(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops)
            and all(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        }
        if uses and all(id(node) in allowed for node in reads):
            placement.append(parameter)
    return tuple(placement)


def _holder(node: ast.AST, holders: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in holders
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and "self." + node.attr in holders
    )


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
        popped = _kwargs_key(iterable, None)
        if popped in parameters:
            return popped, None
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
    placement = _placement_parameters(scope, parameters)
    model = _model_parameter(scope, [p for p in parameters if p != gpus and p not in placement])
    if model is None:
        return None
    return TowerBuilder(
        name, tuple(parameters), model, gpus, gpus_name, _default(init, gpus), placement
    )


def _wrapper(function: ast.FunctionDef, builders: dict[str, TowerBuilder]) -> TowerBuilder | None:
    """A function returning a tower builder's call of its own parameters.

    `def make_parallel(serial_model, gdev_list, ps_device='/cpu:0',
    model_class=ModelMGPU): ... return model_class(serial_model=serial_model,
    gdev_list=gdev_list, ps_device=ps_device)` is that builder by another name.
    """
    parameters = _parameters(function, False)
    defaults = {
        arg.arg: default
        for arg, default in zip(
            function.args.args[len(function.args.args) - len(function.args.defaults) :],
            function.args.defaults,
        )
    }
    for node in ast.walk(function):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        called = _last_name(call.func)
        default = defaults.get(called or "")
        if isinstance(default, ast.Name):
            called = default.id  # `model_class=ModelMGPU`
        inner = builders.get(called or "")
        if inner is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        mapping: dict[str, str] = {}  # inner parameter -> this function's parameter
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Name) and index < len(inner.parameters):
                mapping[inner.parameters[index]] = argument.id
        for keyword in call.keywords:
            if keyword.arg is not None and isinstance(keyword.value, ast.Name):
                mapping[keyword.arg] = keyword.value.id
        model, gpus = mapping.get(inner.model), mapping.get(inner.gpus or "")
        if model not in parameters or gpus not in parameters:
            continue
        placement = tuple(mapping[p] for p in inner.placement if mapping.get(p) in parameters)
        return TowerBuilder(
            function.name,
            tuple(parameters),
            model,
            gpus,
            None,
            _default(function, gpus),
            placement,
        )
    return None


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
            # `DataParallelModel.create(basic_model, gpu_count)`: a factory method.
            for item in statement.body:
                if isinstance(item, ast.FunctionDef) and item is not init:
                    kinds = {_last_name(d) for d in item.decorator_list}
                    if kinds & {"classmethod", "staticmethod"}:
                        name = f"{statement.name}.{item.name}"
                        factory = _builder(name, item, item, "classmethod" in kinds, module_names)
                        if factory is not None:
                            builders[name] = factory
        if found is not None:
            builders[found.name] = found
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name not in builders:
            found = _wrapper(statement, builders)
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
