# SPDX-License-Identifier: Apache-2.0
"""Small LibCST helpers shared by the rewrite rules: names, arguments, paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast, overload

import libcst as cst
from libcst import matchers as m
from libcst.helpers import get_full_name_for_node

_Node = TypeVar("_Node", bound=cst.CSTNode)

# A string literal, as `string_text` reads it.
StringLiteral = cst.SimpleString | cst.FormattedString

# Conventional roots of legacy scripts, used when a snippet never imports them
# (the legacy tutorials' fragments call `keras.utils.multi_gpu_model` with no import).
_CONVENTIONAL_ROOTS = {
    "keras": "keras",
    "tf": "tensorflow",
    "tensorflow": "tensorflow",
    "K": "keras.backend",
}

# Aliases of the Keras namespace, mapped onto `keras.` so that one table of
# legacy names serves `keras.x`, `tf.keras.x` and `tensorflow.python.keras.x`.
_CANONICAL_PREFIXES = (
    ("tensorflow._api.v1.keras.", "keras."),
    ("tensorflow._api.v2.keras.", "keras."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("tensorflow.compat.v1.", "tensorflow."),
    ("tensorflow.compat.v2.", "tensorflow."),
    # Keras 2's TensorFlow backend module: its public names are the backend's.
    ("keras.backend.tensorflow_backend.", "keras.backend."),
)


_KERAS_ALIASES = frozenset(
    {"tensorflow.keras", "tensorflow.python.keras", "tf_keras", "tensorflow._api.v1.keras"}
)


def canonical_name(name: str | None) -> str | None:
    """Maps `tensorflow.keras.a.b` (and friends) to `keras.a.b`."""
    if name is None:
        return None
    previous = None
    while name != previous:  # `tensorflow.compat.v1.keras.x` takes two steps.
        previous = name
        if name in _KERAS_ALIASES:
            return "keras"
        for prefix, replacement in _CANONICAL_PREFIXES:
            if name.startswith(prefix):
                name = replacement + name[len(prefix) :]
                break
    return name


def fallback_name(node: cst.CSTNode) -> str | None:
    """Dotted name of `node`, with conventional roots expanded."""
    dotted = get_full_name_for_node(node)
    if dotted is None:
        return None
    root, _, rest = dotted.partition(".")
    root = _CONVENTIONAL_ROOTS.get(root, root)
    return f"{root}.{rest}" if rest else root


@overload
def dotted(node: cst.Name | cst.Attribute) -> str: ...


@overload
def dotted(node: cst.CSTNode) -> str | None: ...


def dotted(node: cst.CSTNode) -> str | None:
    """Source text of a Name/Attribute chain, e.g. `"keras.utils.x"`.

    Never None for a Name or an Attribute: LibCST always joins an
    attribute's parts (`f().x` is `"f.x"`, `(a + b).x` is `"None.x"`).
    None for a node it cannot name.
    """
    return get_full_name_for_node(node)


def findall(
    tree: cst.CSTNode, node_type: type[_Node], matcher: m.BaseMatcherNode | None = None
) -> list[_Node]:
    """The `node_type` nodes in `tree` (that match `matcher`), in source order.

    `m.findall`, typed: `matcher` is a matcher of `node_type` (`cst.Call`
    and `m.Call(...)`), so type checkers know what the nodes found are.
    """
    is_node_type: m.MatchIfTrue[cst.CSTNode] = m.MatchIfTrue(
        lambda node: isinstance(node, node_type)
    )
    found = m.findall(tree, matcher if matcher is not None else is_node_type)
    return [node for node in found if isinstance(node, node_type)]


def statements(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    """The statements of a body, for reading, a one-line body included.

    `def f(self): pass` holds small statements; they come back as the one
    line they are, so checks read both spellings alike.
    """
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    raise TypeError(f"Expected an indented or one-line body. Received: {type(suite).__name__}.")


def dotted_expression(name: str) -> cst.Name | cst.Attribute:
    """The Name/Attribute chain of a dotted name, e.g. an import's module `keras.layers`."""
    first, *rest = name.split(".")
    node: cst.Name | cst.Attribute = cst.Name(first)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def code(node: cst.CSTNode) -> str:
    """Source text of `node` alone, e.g. `"tf.config.x(True)"`."""
    return cst.Module([]).code_for_node(node)


def free_names(node: cst.CSTNode) -> set[str]:
    """Names `node` reads (not attribute or keyword names)."""

    class _Names(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.names: set[str] = set()

        def visit_Attribute(self, attribute):
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg):
            arg.value.visit(self)
            return False

        def visit_Name(self, name):
            self.names.add(name.value)

    visitor = _Names()
    node.visit(visitor)
    return visitor.names


def expression(code: str) -> cst.BaseExpression:
    """Parses a Python expression."""
    return cst.parse_expression(code)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument passed as `name=`, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    """The plain positional arguments (no `*args`, no keywords)."""
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star(call: cst.Call) -> bool:
    """Whether the call passes `*args` or `**kwargs` (arguments unknown)."""
    return any(arg.star for arg in call.args)


def remove_args(call: cst.Call, drop: Sequence[cst.Arg]) -> cst.Call:
    """Removes arguments, keeping the comma style of the last one."""
    drop_ids = {id(arg) for arg in drop}
    kept = [arg for arg in call.args if id(arg) not in drop_ids]
    if kept and len(kept) != len(call.args):
        last_comma = call.args[-1].comma
        kept[-1] = kept[-1].with_changes(comma=last_comma)
    return call.with_changes(args=kept)


def keywordize(
    call: cst.Call, legacy_signature: Sequence[str], keep_first: bool = True
) -> tuple[cst.Call, list[str]]:
    """Passes positional arguments by keyword, using the legacy signature.

    Keras 3 reordered many signatures (`SGD(lr, momentum, decay, nesterov)`,
    `fit_generator(generator, steps_per_epoch, epochs)`), so a positional
    argument would land on a different parameter, silently.

    Args:
        call: The call.
        legacy_signature: Parameter names in legacy order.
        keep_first: Leave the first argument positional. Defaults to True.

    Returns:
        The call and the names that were made keywords.
    """
    args = list(call.args)
    named = []
    index = 0
    for position, arg in enumerate(args):
        if arg.keyword is not None or arg.star:
            continue
        if index >= len(legacy_signature):
            break
        if not (keep_first and index == 0):
            name = legacy_signature[index]
            args[position] = arg.with_changes(
                keyword=cst.Name(name),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
            named.append(name)
        index += 1
    return call.with_changes(args=args), named


def make_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """A `name=value` argument without spaces around `=`."""
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )


def is_literal_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_literal_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def is_zero(node: cst.BaseExpression | None) -> bool:
    """Whether `node` is the literal 0 / 0. / 0.0."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0) == 0
    if isinstance(node, cst.Float):
        return float(node.value) == 0.0
    return False


def method_name(call: cst.Call) -> str | None:
    """`"fit"` for `x.fit(...)`; None when the callee is not an attribute."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


# --- String literals that hold file paths -------------------------------


@overload
def string_text(node: StringLiteral) -> str: ...


@overload
def string_text(node: cst.CSTNode) -> str | None: ...


def string_text(node: cst.CSTNode) -> str | None:
    """The source text between the quotes of a path literal.

    For an f-string, the text after its last `{...}` part. None for anything
    else (a name, a call, a concatenation).
    """
    if isinstance(node, cst.SimpleString):
        prefix_length = len(node.prefix)
        quote = node.quote
        return node.value[prefix_length + len(quote) : -len(quote)]
    if isinstance(node, cst.FormattedString):
        if node.parts and isinstance(node.parts[-1], cst.FormattedStringText):
            return node.parts[-1].value
        return ""
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    """The value of a str literal (`'a/b'` is `a/b`); None for bytes and anything else."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str):
            return value
    return None


def with_string_text(node: cst.CSTNode, old_tail: str, new_tail: str):
    """Replaces the end `old_tail` of a path literal's text by `new_tail`."""
    text = string_text(node)
    if text is None or not text.endswith(old_tail):
        raise ValueError(f"{text!r} does not end with {old_tail!r}")
    new_text = text[: len(text) - len(old_tail)] + new_tail
    if isinstance(node, cst.SimpleString):
        prefix_length = len(node.prefix)
        quote = node.quote
        return node.with_changes(value=node.value[: prefix_length + len(quote)] + new_text + quote)
    # string_text gave text and `node` is no SimpleString: it is a FormattedString.
    node = cast(cst.FormattedString, node)
    if node.parts and isinstance(node.parts[-1], cst.FormattedStringText):
        parts = list(node.parts)
        parts[-1] = parts[-1].with_changes(value=new_text)
        return node.with_changes(parts=parts)
    return node.with_changes(parts=[*node.parts, cst.FormattedStringText(value=new_text)])
