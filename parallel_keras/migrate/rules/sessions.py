# SPDX-License-Identifier: Apache-2.0
"""Rewrite: TF1 GPU session set-up -> `tf.config`; flag the rest of TF1.

Most multi-GPU scripts open with

    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    sess = tf.Session(config=config)
    K.set_session(sess)

whose only purpose is the GPU options. In TF 2 those options are process-wide
`tf.config` calls, so each known option becomes its call, in place, and the
config, session and `set_session` lines go. The group is rewritten only when
the config and session names are used for nothing else; otherwise, and for
sessions, `tf.train.Server`s and initializers used in other ways, the call
is flagged with the modern way.

TF 2 accepts these calls only before TensorFlow starts using the GPUs, so at
module level they move up to follow the imports (a GPU count or a model
built before the old set-up would otherwise come first).

`per_process_gpu_memory_fraction` has no TF 2 equivalent (a limit is given in
megabytes per GPU): it becomes memory growth, which also keeps the process
from taking the whole GPU, and is flagged with the exact call for a hard cap.

What each TF1 call and option means in TF 2 lives in `session_options.py`;
this module finds the set-up, decides what can go, and rewrites it.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator, Sequence

import libcst as cst
from libcst import matchers as m

from parallel_keras.migrate import context, syntax
from parallel_keras.migrate.rules import session_options

RULE = "TF1 sessions"

# name, what it becomes (None: flagged), why. Read by the audit table (docs).
AUDIT: list[tuple] = [
    (
        "tf.ConfigProto / tf.GPUOptions options (set-up only)",
        "tf.config calls after the imports",
        "TF 2 has no sessions; each option is a process-wide tf.config call",
    ),
    (
        "tf.Session(config=...) + K.set_session(...) (set-up only)",
        "(removed)",
        "Keras 3 has no session; the options became tf.config calls",
    ),
    (
        "os.environ['CUDA_VISIBLE_DEVICES'] before the TensorFlow/Keras imports",
        "(kept)",
        "TF 2 reads it when it starts",
    ),
    (
        "os.environ['CUDA_VISIBLE_DEVICES'] after them",
        "tf.config.set_visible_devices(...)",
        "the call works until a GPU is used, and is moved up after the imports",
    ),
    (
        "per_process_gpu_memory_fraction",
        None,
        "no TF 2 equivalent: memory growth, plus the "
        "exact set_logical_device_configuration call for a hard cap",
    ),
    *(
        (
            name.replace("tensorflow.", "tf.").replace("keras.backend.", "K."),
            target.format(tf="tf"),
            "runs in TF 2 with Keras 2's meaning",
            modern,
        )
        for name, (target, modern) in session_options.COMPAT.items()
    ),
    *(
        (name.replace("tensorflow.", "tf.").replace("keras.backend.", "K."), None, action)
        for name, (_, action) in session_options.FLAGGED.items()
        if name not in session_options.COMPAT
    ),
]

# Stands where the first hoisted statement was, until `leave_Module` moves
# the hoisted calls up after the imports.
_MARKER = cst.SimpleStatementLine([cst.Pass()])
_GENERATED_NAMES = frozenset({"physical_gpu", "gpu", "str", "True", "False", "None"})


# `import parallel_keras` (and what migrate adds) initialises no GPU: TF 2 reads
# CUDA_VISIBLE_DEVICES when a GPU is first used, not when it is imported.
_STARTS_TENSORFLOW = ("tensorflow", "keras")


def _imports_tensorflow(statement: cst.CSTNode) -> bool:
    """Whether a module-level statement imports TensorFlow (or what imports it)."""
    modules = [
        syntax.dotted(alias.name)
        for node in syntax.findall(statement, cst.Import)
        for alias in node.names
    ]
    modules += [
        syntax.dotted(node.module)
        for node in syntax.findall(statement, cst.ImportFrom)
        if node.module is not None
    ]
    return any(module.split(".")[0] in _STARTS_TENSORFLOW for module in modules)


def _bare_module_imports(statement: cst.CSTNode) -> set[str]:
    """The names `import keras` / `import tensorflow` bind, or none.

    Such a statement (what migrate itself adds for rewritten code) binds the
    module and starts no GPU: after `import keras, tensorflow` TensorFlow's
    context is not created and no device is listed (measured on TF 2.21), so the
    variable still counts until a statement reads the name.
    """
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    names: set[str] = set()
    for small in statement.body:
        if not isinstance(small, cst.Import):
            return set()
        for alias in small.names:
            name = syntax.dotted(alias.name)
            if alias.asname is not None or name not in _STARTS_TENSORFLOW:
                return set()
            names.add(name)
    return names


def _reads(statement: cst.CSTNode, names: set[str]) -> bool:
    return not syntax.free_names(statement).isdisjoint(names)


def _blocks(node: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The bodies of a compound statement (its elif/else/except/finally ones too)."""
    for child in node.children:
        if isinstance(child, cst.BaseSuite):
            yield child
        else:  # Expressions hold no statements; If/Else/ExceptHandler do.
            yield from _blocks(child)


class SessionRule(context.Rule):
    """Rewrites GPU session set-up to `tf.config` and flags other TF1 code."""

    name = RULE

    reads = {"handled_calls": context.Phase.REWRITE}

    def __init__(self):
        self._configs: dict[str, bool] = {}  # name -> every option known
        self._sessions: dict[str, cst.Call] = {}  # name -> Session(...) call
        self._uses: collections.Counter = collections.Counter()
        self._known_uses: collections.Counter = collections.Counter()
        self._removable: set[str] = set()
        self._emitted: set[str] = set()  # Each tf.config call is written once.
        # Comments above a removed line, kept for the next line written here.
        self._carried_lines: list[cst.EmptyLine] = []
        # id(call) -> the assigned name or `set_session(...)` call holding it.
        self._call_owners: dict[int, cst.Name | cst.Call] = {}
        # Module-level tf.config calls, moved up to follow the imports.
        self._top_level: set[int] = set()
        self._hoisted: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = []
        self._before_tensorflow: set[int] = set()

    # -- Scan: which names hold a config or a session, and their other uses --

    def visit_Module(self, ctx, node):
        self._top_level = {id(statement) for statement in node.body}
        # Statements that run before TensorFlow is imported, at module level or
        # before an import in a block (`if __name__ == '__main__':`, a function):
        # an environment variable set there is read when TensorFlow starts, and
        # a tf.config call there would run before `tf` is bound.
        self._mark_before_tensorflow(node.body, imported=False, unread=set())

    def _mark_before_tensorflow(
        self, body: Sequence[cst.CSTNode], imported: bool, unread: set[str]
    ) -> bool:
        """Records the statements of `body` run before a TensorFlow import.

        `unread` collects the names bound by a bare `import keras` /
        `import tensorflow`, which count from the first statement reading
        them (so the import migrate adds above an `if __name__ == '__main__':`
        block that sets the variable does not move it "after" on a second run).

        Returns:
            Whether TensorFlow is imported once `body` has run.
        """
        for statement in body:
            simple = isinstance(statement, cst.SimpleStatementLine)
            if not imported and simple and unread and _reads(statement, unread):
                imported = True
            if not imported:
                self._before_tensorflow.add(id(statement))
            if isinstance(statement, cst.ClassDef):
                continue
            if isinstance(statement, cst.FunctionDef):
                # A function importing TensorFlow itself binds `tf` locally:
                # its lines before that import run without it.
                if _imports_tensorflow(statement.body):
                    self._mark_before_tensorflow(syntax.statements(statement.body), False, set())
                continue
            if isinstance(statement, cst.BaseCompoundStatement):
                for block in _blocks(statement):
                    self._mark_before_tensorflow(syntax.statements(block), imported, unread)
                if unread and _reads(statement, unread):
                    imported = True
            bare = _bare_module_imports(statement)
            if bare:
                unread |= bare
            elif _imports_tensorflow(statement):
                imported = True
        return imported

    def visit_Name(self, ctx, node):
        self._uses[node.value] += 1

    # Keyword and attribute names are Name nodes too, but not uses.
    def visit_Arg(self, ctx, node):
        if node.keyword is not None:
            self._uses[node.keyword.value] -= 1

    def visit_Attribute(self, ctx, node):
        self._uses[node.attr.value] -= 1

    def visit_Assign(self, ctx, node):
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(target, cst.Name) and isinstance(value, cst.Call):
            qualified = ctx.qualified_name(value.func)
            if qualified == session_options.CONFIG:
                self._configs[target.value] = session_options.options_known(ctx, value)
                self._known_uses[target.value] += 1
            elif qualified == session_options.SESSION:
                self._sessions[target.value] = value
                self._known_uses[target.value] += 1
                self._count_config_argument(value)
        option = session_options.config_option(target)
        if option is not None:
            root, name = option
            self._known_uses[root] += 1
            if name not in session_options.OPTIONS:  # Nor one of OPTIONS_READ_APART.
                self._configs[root] = False

    def visit_Call(self, ctx, node):
        qualified = ctx.qualified_name(node.func)
        if qualified == session_options.SET_SESSION and len(node.args) == 1:
            value = node.args[0].value
            if isinstance(value, cst.Name):
                self._known_uses[value.value] += 1
            elif (
                isinstance(value, cst.Call)
                and ctx.qualified_name(value.func) == session_options.SESSION
            ):
                self._count_config_argument(value)

    def _count_config_argument(self, session_call: cst.Call) -> None:
        config = syntax.keyword(session_call, "config")
        if config is not None and isinstance(config.value, cst.Name):
            self._known_uses[config.value.value] += 1

    def finish_scan(self, ctx):
        for name, known in self._configs.items():
            if known and self._uses[name] == self._known_uses[name]:
                self._removable.add(name)
        for name, call in self._sessions.items():
            config = syntax.keyword(call, "config")
            config_ok = config is None or (
                isinstance(config.value, cst.Name) and config.value.value in self._removable
            )
            other_args = [arg for arg in call.args if arg is not config]
            if config_ok and not other_args and self._uses[name] == self._known_uses[name]:
                self._removable.add(name)
        # A session that stays (returned, used) keeps its config: deleting the
        # config would leave the session naming a deleted variable.
        for name, call in self._sessions.items():
            config = syntax.keyword(call, "config")
            if (
                name not in self._removable
                and config is not None
                and isinstance(config.value, cst.Name)
            ):
                self._removable.discard(config.value.value)

    # -- Rewrite ------------------------------------------------------------

    def _session_call_removable(self, ctx, call) -> bool:
        config = syntax.keyword(call, "config")
        others = [arg for arg in call.args if arg is not config]
        if others:
            return False
        if config is None:
            return True
        if isinstance(config.value, cst.Name):
            return config.value.value in self._removable
        return (
            isinstance(config.value, cst.Call)
            and ctx.qualified_name(config.value.func) == session_options.CONFIG
            and session_options.options_known(ctx, config.value)
        )

    def _replacement(self, ctx, original):
        """The statements replacing a session/config line, or None to keep it."""
        if len(original.body) != 1:
            return None
        statement = original.body[0]
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
            return self._assignment(ctx, original, statement)
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            return self._set_session(ctx, original, statement.value)
        return None

    def _not_emitted(self, statements):
        """`statements` this rule has not written yet (each tf.config call once)."""
        unique = []
        for new in statements:
            code = syntax.code(new)
            if code not in self._emitted:
                self._emitted.add(code)
                unique.append(new)
        return unique

    def _hoistable(self, ctx, original, replacement) -> bool:
        """A top-level replacement that reads only TensorFlow, so can go after the imports."""
        return (
            id(original) in self._top_level
            and not ctx.has_pending_notes()
            and all(
                syntax.free_names(new) <= {ctx.tf_module(), *_GENERATED_NAMES}
                for new in replacement
            )
        )

    def leave_SimpleStatementLine(self, ctx, original, updated):
        replacement = self._replacement(ctx, original)
        if replacement is None:
            return updated
        unique = self._not_emitted(replacement)
        if unique or not ctx.has_pending_notes():
            replacement = unique
        if not replacement:
            if updated.leading_lines and not self._carried_lines:
                self._carried_lines = list(updated.leading_lines)
            return cst.RemoveFromParent()
        leading = self._carried_lines or list(updated.leading_lines)
        self._carried_lines = []
        comment = updated.trailing_whitespace.comment
        if comment is not None:  # `... = True  # why` keeps its why, above.
            leading.append(cst.EmptyLine(indent=True, comment=comment))
        replacement[0] = replacement[0].with_changes(leading_lines=leading)
        if self._hoistable(ctx, original, replacement):
            # TF 2 accepts these calls only before TensorFlow starts using
            # the GPUs, so they go right after the imports.
            marker = not self._hoisted
            self._hoisted.extend(replacement)
            return _MARKER if marker else cst.RemoveFromParent()
        return cst.FlattenSentinel(replacement)

    def leave_Module(self, ctx, original, updated):
        body = list(updated.body)
        index = next((i for i, s in enumerate(body) if s is _MARKER), None)
        if index is None:
            return updated
        imports = [
            i
            for i, statement in enumerate(body[:index])
            if isinstance(statement, cst.SimpleStatementLine)
            and all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)
        ]
        hoisted = list(self._hoisted)
        del body[index]
        at = imports[-1] + 1 if imports else index
        leading = hoisted[0].leading_lines
        if not leading or leading[0].comment is not None:  # A blank line after the imports.
            hoisted[0] = hoisted[0].with_changes(
                leading_lines=[cst.EmptyLine(), *hoisted[0].leading_lines]
            )
        body[at:at] = hoisted
        return updated.with_changes(body=body)

    def _assignment(self, ctx, line, statement):
        target = statement.targets[0].target
        value = statement.value
        if isinstance(target, cst.Name) and target.value in self._removable:
            qualified = ctx.qualified_name(value.func)
            if qualified == session_options.CONFIG:
                statements = self._from_config_call(ctx, line, value)
                what = "TF1 session options"
            else:
                statements, what = [], "the TF1 session"
            ctx.change(
                line,
                RULE,
                f"removed `{target.value} = {syntax.dotted(value.func)}(...)`: "
                f"{what} became tf.config calls (TF 2 has no sessions)",
            )
            return statements
        option = session_options.config_option(target)
        if option is None or option[0] not in self._removable:
            return self._cuda_visible_devices(ctx, line, target, value)
        return self._option(ctx, line, option[1], value)

    def _from_config_call(self, ctx, line, call):
        statements = []
        for arg in call.args:
            name = arg.keyword.value
            if name == "gpu_options":
                statements += self._from_config_call(ctx, line, arg.value)
            elif name == "device_count":
                if session_options.device_count(arg.value) == 0:
                    statements.append(
                        cst.parse_statement(
                            f"{ctx.tf_module()}.config.set_visible_devices([], 'GPU')\n"
                        )
                    )
            else:
                statements += self._option(ctx, line, name, arg.value, record=False)
        return statements

    def _option(self, ctx, line, name, value, record=True):
        code = syntax.code(value)
        if name in ("allow_growth",) and session_options.is_false(value):
            if record:
                ctx.change(line, RULE, f"removed `{name} = {code}` (the TF 2 default)")
            return []
        template = session_options.OPTIONS[name]
        statement = cst.parse_statement(template.format(tf=ctx.tf_module(), value=code))
        if record:
            ctx.change(
                line,
                RULE,
                f"session option `{name} = {code}` -> "
                f"`{syntax.code(statement).splitlines()[-1].strip()}`",
            )
        if name == "per_process_gpu_memory_fraction":
            ctx.flag(
                line,
                RULE,
                "TF 2 has no per-process GPU memory fraction",
                session_options.MEMORY_FRACTION_ACTION.format(value=code),
            )
        return [statement]

    def _cuda_visible_devices(self, ctx, line, target, value):
        """`os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'` -> `tf.config.set_visible_devices`."""
        if not session_options.is_cuda_visible_devices(target):
            return None
        if id(line) in self._before_tensorflow:
            # TF 2 still reads the variable when it starts; a tf.config call
            # here would run before `tf` is imported.
            return None
        statement = cst.parse_statement(
            session_options.OPTIONS["visible_device_list"].format(
                tf=ctx.tf_module(), value=syntax.code(value)
            )
        )
        ctx.change(
            line,
            RULE,
            "`os.environ['CUDA_VISIBLE_DEVICES'] = ...` -> "
            "`tf.config.set_visible_devices(...)`: the variable only works "
            "if set before TensorFlow starts; the call works until a GPU is used",
        )
        return [statement]

    def _set_session(self, ctx, line, call):
        if ctx.qualified_name(call.func) != session_options.SET_SESSION or len(call.args) != 1:
            return None
        if not self._set_session_removable(ctx, call):
            return None
        statements = []
        value = call.args[0].value
        config = syntax.keyword(value, "config") if isinstance(value, cst.Call) else None
        if config is not None and isinstance(config.value, cst.Call):
            statements = self._from_config_call(ctx, line, config.value)
        what = "became tf.config calls" if statements else "are set with tf.config"
        ctx.change(
            line,
            RULE,
            f"removed `{syntax.dotted(call.func)}(...)`: Keras 3 has no "
            f"session; its GPU options {what}",
        )
        return statements

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        if self._rewritten(ctx, original, qualified):
            return updated
        if id(original) in ctx.facts.handled_calls:
            return updated  # Rewritten by another rule (GPU counts).
        if qualified in session_options.COMPAT and not self._on_a_cluster(ctx, original, qualified):
            return self._compat(ctx, original, updated, qualified)
        if any(qualified.startswith(name + ".") for name in session_options.COMPAT):
            return updated  # `K.get_session().run(...)`: the inner call is rewritten.
        for name, (message, action) in session_options.FLAGGED.items():
            if qualified == name or qualified.startswith(name + "."):
                ctx.flag(original, RULE, f"`{syntax.dotted(original.func)}`: {message}", action)
                break
        return updated

    def _on_a_cluster(self, ctx, call, qualified) -> bool:
        """A session on a TF1 cluster (`tf.Session(server.target)`), or set_session of one.

        Such a session trains on other machines; no compatibility path keeps
        that meaning, so it stays flagged with the multi-worker way.
        """

        def has_target(session_call) -> bool:
            return bool(syntax.positional(session_call)) or (
                syntax.keyword(session_call, "target") is not None
            )

        if qualified in (session_options.SESSION, "tensorflow.InteractiveSession"):
            return has_target(call)
        if qualified == session_options.SET_SESSION and len(call.args) == 1:
            value = call.args[0].value
            if isinstance(value, cst.Name) and value.value in self._sessions:
                return has_target(self._sessions[value.value])
            if (
                isinstance(value, cst.Call)
                and ctx.qualified_name(value.func) == session_options.SESSION
            ):
                return has_target(value)
        return False

    def _compat(self, ctx, original, updated, qualified):
        """`tf.Session(...)` -> `parallel_keras.compat.Session(...)`, and the like."""
        old = syntax.dotted(original.func)
        target, modern = session_options.COMPAT[qualified]
        if "compat" in old.split(".") and not target.startswith("parallel_keras."):
            return updated  # Already on TensorFlow's compatibility path.
        if target.startswith("parallel_keras."):
            ctx.require_import("parallel_keras")
        new = target.format(tf=ctx.tf_module())
        ctx.compat(
            original,
            RULE,
            f"`{old}` -> `{new}`: runs in TF 2 with Keras 2's meaning"
            + (
                " (the session's GPU options go to tf.config)"
                if new.startswith("parallel_keras.")
                else " (TensorFlow's compatibility path)"
            ),
            modern,
        )
        return updated.with_changes(func=syntax.expression(new))

    def _rewritten(self, ctx, call, qualified) -> bool:
        """Whether `call` is part of set-up that the statement rewrite removes."""
        if qualified == session_options.SET_SESSION:
            return self._set_session_removable(ctx, call)
        if qualified in (
            session_options.CONFIG,
            session_options.GPU_OPTIONS,
            session_options.SESSION,
        ):
            return self._in_removed_statement(ctx, call)
        return False

    def _set_session_removable(self, ctx, call) -> bool:
        if len(call.args) != 1:
            return False
        value = call.args[0].value
        if isinstance(value, cst.Name):
            return value.value in self._removable
        return (
            isinstance(value, cst.Call)
            and ctx.qualified_name(value.func) == session_options.SESSION
            and self._session_call_removable(ctx, value)
        )

    def _in_removed_statement(self, ctx, call) -> bool:
        """A config/session constructor in an assignment or set_session that goes."""
        owner = self._call_owners.get(id(call))
        return owner is not None and self._owner_removable(ctx, owner)

    def visit_SimpleStatementLine(self, ctx, node):
        # Calls inside statements that will be removed are not flagged.
        if len(node.body) != 1:
            return
        statement = node.body[0]
        owners = self._call_owners
        owner: cst.Name | cst.Call | None = None
        if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Call):
            if isinstance(statement.targets[0].target, cst.Name):
                owner = statement.targets[0].target
        elif isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            owner = statement.value
        if owner is not None:
            for call in m.findall(statement.value, m.Call()):
                if call is not owner:
                    owners.setdefault(id(call), owner)
            if isinstance(owner, cst.Name):
                owners[id(statement.value)] = owner

    def _owner_removable(self, ctx, owner) -> bool:
        if isinstance(owner, cst.Name):
            return owner.value in self._removable
        return self._set_session_removable(ctx, owner)
