# SPDX-License-Identifier: Apache-2.0
"""What one file's rewrite needs to know about the other files of its folder.

Legacy projects split a training script over modules: the `Sequence`
subclass or the batch generator lives in `data.py`, `fit_generator` is called
in `train.py`, and a vendored `utils/multi_gpu.py` defines its own
`multi_gpu_model`. Each file is rewritten on its own, so before any rewrite
the driver reads every file once (`scan_project`, parse only) and hands the
resulting `Project` to each file's `Context`.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from parallel_keras.migrate import towers, training_calls

_SEQUENCE_BASES = frozenset({"Sequence", "PyDataset"})
# Keras's own iterators, never a function of the project.
_KERAS_ITERATORS = frozenset({"flow", "flow_from_directory", "flow_from_dataframe"})


@dataclasses.dataclass
class Project:
    """Names defined or used across the files migrated together.

    Args:
        sequence_classes: Classes subclassing `keras.utils.Sequence`.
        fit_data_functions: Functions whose result is passed as the data of
            `fit`/`fit_generator`/... somewhere (directly or through a name).
        multi_gpu_model_modules: Dotted module names (relative to the folder)
            that define their own `def multi_gpu_model(`.
        checkpoint_classes: Classes of the project that re-implement Keras
            2's ModelCheckpoint (a `filepath` parameter, a `save_weights`
            call) -> positions of `filepath` and `save_weights_only` in a
            call of the class (None when it has no such parameter).
        log_keys: Accuracy log keys read anywhere ('acc', 'val_accuracy',
            ...: `monitor=`, `logs[...]`, `.get(...)`, path format fields).
        tower_builders: Dotted module name -> its functions and classes
            that are multi_gpu_model under another name (`towers.py`).
        wrapper_fit_methods: Classes of the project that are no Keras model
            but define their own `fit_generator`-style methods (a wrapper
            holding `self.model`) -> those method names: a call of them on an
            instance is the project's method, not Keras's.
        dict_batch_functions: Functions that yield dicts (or a tuple holding
            one) and classes whose `__getitem__` returns them: data Keras 2
            read by the model's input and output names.
    """

    sequence_classes: set[str] = dataclasses.field(default_factory=set)
    fit_data_functions: set[str] = dataclasses.field(default_factory=set)
    multi_gpu_model_modules: set[str] = dataclasses.field(default_factory=set)
    checkpoint_classes: dict[str, tuple[int, int | None]] = dataclasses.field(default_factory=dict)
    log_keys: set[str] = dataclasses.field(default_factory=set)
    tower_builders: dict[str, dict[str, towers.TowerBuilder]] = dataclasses.field(
        default_factory=dict
    )
    wrapper_fit_methods: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    dict_batch_functions: set[str] = dataclasses.field(default_factory=set)
    # Functions returning a dict (or a tuple holding one); function -> the
    # functions whose calls it yields: resolved into dict_batch_functions.
    dict_returning_functions: set[str] = dataclasses.field(default_factory=set)
    yielded_calls: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    # Module -> (modules it may import from, name or "*", local name): a
    # package's `from ._multigpu import *` re-exports that module's builders.
    reexports: dict[str, list[tuple[tuple[str, ...], str, str]]] = dataclasses.field(
        default_factory=dict
    )
    # Module -> names its module-level absolute imports bind -> what they name
    # (`from keras import optimizers`: "optimizers" -> "keras.optimizers").
    imported_names: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    # File path -> the names a `from <project module> import *` gives it
    # (`from utils import *` where utils.py does `from keras import optimizers`).
    star_names: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    # File path -> its module name (relative to the folder).
    modules: dict[str, str] = dataclasses.field(default_factory=dict)


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def checkpoint_parameters(node: ast.ClassDef) -> tuple[int, int | None] | None:
    """(filepath, save_weights_only) positions of a hand-written checkpoint class."""
    init = next(
        (
            item
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        ),
        None,
    )
    if init is None:
        return None
    names = [arg.arg for arg in init.args.args[1:]]
    saves = any(
        isinstance(call, ast.Call) and _name(call.func) == "save_weights" for call in ast.walk(node)
    )
    if "filepath" not in names or not saves:
        return None
    weights_only = names.index("save_weights_only") if "save_weights_only" in names else None
    return names.index("filepath"), weights_only


_ACCURACY_KEYS = frozenset({"acc", "val_acc", "accuracy", "val_accuracy"})
_FIELD = re.compile(r"\{((?:val_)?acc(?:uracy)?)[:!}]")


def _log_keys(tree: ast.AST) -> set[str]:
    """The accuracy log keys a module reads (see `Project.log_keys`)."""
    keys = set()
    for node in ast.walk(tree):
        candidates = []
        if isinstance(node, ast.Subscript):
            candidates.append(node.slice)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
                candidates.append(node.args[0])
            candidates += [k.value for k in node.keywords if k.arg == "monitor"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            keys.update(_FIELD.findall(node.value))
        keys.update(
            c.value for c in candidates if isinstance(c, ast.Constant) and c.value in _ACCURACY_KEYS
        )
    return keys


def scan_source(source: str, module: str, project: Project) -> None:
    """Adds what `source` (the module `module`) defines and uses to `project`."""
    try:
        tree = ast.parse(source)
        project.log_keys |= _log_keys(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Reported when the file itself is migrated (a syntax error, or an
        # expression nested deeper than the parser's recursion limit).
        return
    builders = towers.find_tower_builders(tree)
    if builders:
        project.tower_builders[module] = builders
    for statement in _module_level(tree.body):
        _record_imported_names(statement, module, project)
        if isinstance(statement, ast.ImportFrom) and statement.module is not None:
            if statement.level:
                # A package's __init__ (`module` is the package) or a module beside it.
                parts = module.split(".")
                bases = [".".join(parts[: len(parts) - statement.level + 1 - k]) for k in (0, 1)]
                sources = tuple(f"{b}.{statement.module}" if b else statement.module for b in bases)
            else:
                sources = (statement.module,)
            for alias in statement.names:
                project.reexports.setdefault(module, []).append(
                    (sources, alias.name, alias.asname or alias.name)
                )
    _scan_dict_batches(tree, project)
    calls_of: dict[str, str] = {}  # variable -> function whose call it holds
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            if any(_name(base) in _SEQUENCE_BASES for base in node.bases):
                project.sequence_classes.add(node.name)
            positions = checkpoint_parameters(node)
            if positions is not None:
                project.checkpoint_classes[node.name] = positions
            methods = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name in training_calls.METHODS
            }
            if methods and not any(
                (_name(base) or "") in ("Model", "Sequential", "Layer") for base in node.bases
            ):
                project.wrapper_fit_methods.setdefault(node.name, set()).update(methods)
        elif isinstance(node, ast.FunctionDef) and node.name == "multi_gpu_model":
            if node in tree.body:
                project.multi_gpu_model_modules.add(module)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            function = _name(node.value.func)
            for target in node.targets:
                if isinstance(target, ast.Name) and function:
                    calls_of[target.id] = function
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and _name(node.func) in training_calls.METHODS
            and isinstance(node.func, ast.Attribute)
        ):
            continue
        values = [
            keyword.value
            for keyword in node.keywords
            if keyword.arg in training_calls.DATA_KEYWORDS
        ]
        values += node.args[:1]
        for value in values:
            if isinstance(value, ast.Call):
                function = _name(value.func)
            else:
                function = calls_of.get(value.id) if isinstance(value, ast.Name) else None
            if function and function not in _KERAS_ITERATORS:
                project.fit_data_functions.add(function)


def _makes_dicts(function: ast.AST, kind: type) -> bool:
    """Whether `function` yields (`kind` ast.Yield) or returns a dict or a tuple holding one."""

    def is_dict(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Dict) or (
            isinstance(node, ast.Call) and _name(node.func) == "dict"
        )

    names = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and is_dict(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(function):
        if isinstance(node, kind):
            value = getattr(node, "value", None)
            parts = value.elts if isinstance(value, ast.Tuple) else [value]
            if any(
                is_dict(part) or (isinstance(part, ast.Name) and part.id in names) for part in parts
            ):
                return True
    return False


def _scan_dict_batches(tree: ast.AST, project: Project) -> None:
    """Functions yielding dict batches (or a call of a function returning
    them, Keras 2's image_ocr `yield self.get_batch(...)`) and classes whose
    `__getitem__` returns them."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _makes_dicts(node, ast.Yield):
                project.dict_batch_functions.add(node.name)
            if _makes_dicts(node, ast.Return):
                project.dict_returning_functions.add(node.name)
            for found in ast.walk(node):
                if isinstance(found, ast.Yield) and isinstance(found.value, ast.Call):
                    called = _name(found.value.func)
                    if called:
                        project.yielded_calls.setdefault(node.name, set()).add(called)
        elif isinstance(node, ast.ClassDef) and any(
            isinstance(item, ast.FunctionDef)
            and item.name == "__getitem__"
            and _makes_dicts(item, ast.Return)
            for item in node.body
        ):
            project.dict_batch_functions.add(node.name)


def _module_level(body: list[ast.stmt]):
    """The module's statements, with those inside its `if`/`try`/`with` blocks
    (`if __name__ == '__main__': from utils import *`), never a function's."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.With | ast.Try):
            for block in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                yield from _module_level(handler.body)


def _record_imported_names(statement: ast.stmt, module: str, project: Project) -> None:
    names = project.imported_names.setdefault(module, {})
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                names[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                names[top] = top
    elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
        for alias in statement.names:
            if alias.name != "*":
                names[alias.asname or alias.name] = f"{statement.module}.{alias.name}"


def _star_names(project: Project) -> None:
    """What each file's `from <project module> import *` binds (public names)."""
    for path, module in project.modules.items():
        found: dict[str, str] = {}
        for sources, name, _ in project.reexports.get(module, []):
            if name != "*":
                continue
            for source in sources:
                for local, qualified in project.imported_names.get(source, {}).items():
                    if not local.startswith("_"):
                        found.setdefault(local, qualified)
        if found:
            project.star_names[path] = found


def scan_project(files: list[tuple[str, str]], read) -> Project:
    """Reads every file once (parse only) and collects the `Project`.

    Args:
        files: (path, path relative to its folder) pairs.
        read: Returns a file's text (the driver's reader); a file it cannot
            read is skipped (its own migration reports why).

    Returns:
        The project's names.
    """
    project = Project()
    for path, relative in files:
        try:
            source = read(path)
        except (OSError, ValueError):
            continue
        module = relative[: -len(".py")] if relative.endswith(".py") else relative
        module = module.replace("\\", "/").replace("/", ".").removesuffix(".__init__")
        project.modules[path] = module
        scan_source(source, module, project)
    _follow_reexports(project)
    _star_names(project)
    project.dict_batch_functions |= {
        function
        for function, called in project.yielded_calls.items()
        if called & project.dict_returning_functions
    }
    return project


def _follow_reexports(project: Project) -> None:
    """Adds the builders a module imports from another to that module's own."""
    for _ in range(3):  # Packages re-exporting packages.
        changed = False
        for module, imports in project.reexports.items():
            for sources, name, local in imports:
                for source in sources:
                    builders = project.tower_builders.get(source, {})
                    if name == "*":
                        found = builders
                    else:
                        found = {local: builders[name]} if name in builders else {}
                    mine = project.tower_builders.setdefault(module, {})
                    for key, builder in found.items():
                        if key not in mine:
                            mine[key] = builder
                            changed = True
        if not changed:
            break
    project.tower_builders = {m: b for m, b in project.tower_builders.items() if b}
