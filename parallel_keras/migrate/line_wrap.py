# SPDX-License-Identifier: Apache-2.0
"""Keeps the lines a rewrite lengthened within the file's own longest line.

A rewrite can make a line longer than any line the user wrote (a Keras 3
name, a compatibility path such as `parallel_keras.compat.batch_flatten`).
Each such line gets the argument list of one call split, the way a person
following PEP 8 (or black) would write it:

- the call is the outermost one on the line: the statement's value, or an
  argument of a call (an element of a list) the user already wrote over
  several lines; a call inside an operator, an index, an attribute, an
  f-string or a comprehension is never split (`keras.ops.sum(\\n    y\\n)`
  in the middle of an expression reads worse than the long line);
- its arguments go on one continuation line when they fit there (hanging
  indent), else one per line; one level deeper than the line, in the file's
  own indent unit (4 spaces, 2, a tab); the closing parenthesis back at the
  line's indentation;
- an assigned or returned value that is not a call (`a or b`) is
  parenthesised on its own continuation line, only when it fits there.

A rewritten line those splits cannot bring within the limit (a comprehension,
an operator, a call the user had already continued on the next line) has its
whole statement laid out by black (https://black.readthedocs.io), at the
file's limit less the statement's indentation, keeping the file's quotes;
only if every line it writes fits. A block's header (`if`, `for`, `while`,
`with`, `def`, `class`) is laid out alone, its block and `else:` kept.

Lines the user wrote are never touched, nor is a line no split brings within
the limit at its first and last line. Only the layout changes (black's also
adds or drops redundant parentheses and trailing commas, and spells `2.` as
`2.0`): if Python would read the result differently (its syntax tree
differs), the round is dropped. A second run finds no new line, so it changes nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import libcst as cst
from libcst import metadata

# How many times the code is re-read: a round per nesting level (a call's
# argument line that is still too long gets its own call split next round).
_ROUNDS = 6
# A file whose lines were all shorter keeps its rewritten lines within PEP 8's
# 79 characters (a short snippet's one-line rewrites stay one line).
SHORT_LINE = 79

# What may follow a split call's ")" on its line.
_CLOSING_ONLY = re.compile(r"[\s)\]},]*(#.*)?$")
_VALUES = (
    cst.IfExp,
    cst.BinaryOperation,
    cst.BooleanOperation,
    cst.Comparison,
    cst.UnaryOperation,
)


def line_limit(source: str) -> int:
    """The longest a line migrate writes into `source` may be: its longest line, 79 at least."""
    return max([SHORT_LINE, *(len(line) for line in source.splitlines())])


def wrap_long_lines(source: str, module: cst.Module) -> cst.Module:
    """Splits the calls of rewritten lines longer than the file's longest line.

    Args:
        source: The original text of the file.
        module: The rewritten module.

    Returns:
        The module with its long rewritten lines split where a split keeps
        every new line within the limit at its first and last line.
    """
    original = source.splitlines()
    limit = line_limit(source)
    written = set(original)
    for _ in range(_ROUNDS):
        code = module.code
        lines = code.splitlines()
        long_lines = {
            number
            for number, line in enumerate(lines, 1)
            if len(line) > limit and line not in written
        }
        if not long_lines:
            break
        wrapper = metadata.MetadataWrapper(module)
        planner = _Planner(wrapper, long_lines, lines, limit)
        wrapper.module.visit(planner)
        splits = planner.choose()
        if not splits:
            break
        split = wrapper.module.visit(_Split(splits))
        try:
            same = ast.dump(ast.parse(split.code)) == ast.dump(ast.parse(code))
        except SyntaxError:
            same = False
        if not same:
            break
        module = split
    return _lay_out_statements(module, limit, written)


def _long_lines(code: str, limit: int, written: set[str]) -> set[int]:
    return {
        number
        for number, line in enumerate(code.splitlines(), 1)
        if len(line) > limit and line not in written and not line.lstrip().startswith("#")
    }


def _lay_out_statements(module: cst.Module, limit: int, written: set[str]) -> cst.Module:
    """Black's layout for each statement or block header still holding a long rewritten line."""
    code = module.code
    long_lines = _long_lines(code, limit, written)
    if not long_lines:
        return module
    wrapper = metadata.MetadataWrapper(module)
    positions = wrapper.resolve(metadata.PositionProvider)
    lines = code.splitlines()
    layouts: dict[cst.CSTNode, cst.CSTNode] = {}
    for statement, position in positions.items():
        first = position.start.line  # Its own first line (after leading comments).
        if isinstance(statement, cst.SimpleStatementLine):
            last = position.end.line
        elif isinstance(statement, _HEADED) and not lines[first - 1].lstrip().startswith("elif"):
            # Only the header: the lines up to the colon before the block.
            last = first + _header(statement).code.count("\n") - 2
        else:
            continue
        if not any(first <= number <= last for number in long_lines):
            continue
        indent = _leading_space(lines[first - 1])
        laid_out = _black_layout(statement, limit - len(indent.expandtabs()))
        if laid_out is not None:
            layouts[statement] = laid_out
    if not layouts:
        return module
    result = wrapper.module.visit(_Replace(layouts))
    try:
        same = ast.dump(ast.parse(result.code)) == ast.dump(ast.parse(code))
    except SyntaxError:
        same = False
    return result if same else module


# Statements whose header black may lay out, its block kept as it is.
_HEADED = (cst.If, cst.For, cst.While, cst.With, cst.FunctionDef, cst.ClassDef)
_PASS = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])


def _header(statement: cst.BaseCompoundStatement) -> cst.Module:
    """The statement's header alone, over a `pass` block (no decorators, no `else:`)."""
    changes: dict = {"body": _PASS, "leading_lines": []}
    if hasattr(statement, "orelse"):
        changes["orelse"] = None
    if hasattr(statement, "decorators"):
        # Its position starts at `def`/`class`, after the decorators.
        changes["decorators"] = []
    return cst.Module(body=[statement.with_changes(**changes)])


def _black_layout(
    statement: cst.SimpleStatementLine | cst.BaseCompoundStatement, width: int
) -> cst.CSTNode | None:
    """`statement` (a block's header only) as black lays it out within `width`, or None."""
    import black  # Only a file with such a line pays for the import.

    headed = isinstance(statement, _HEADED)
    if isinstance(statement, _HEADED):
        text = _header(statement).code
    else:
        text = cst.Module(body=[statement.with_changes(leading_lines=[])]).code
    try:
        formatted = black.format_str(
            text, mode=black.Mode(line_length=max(width, 20), string_normalization=False)
        )
        body = cst.parse_module(formatted).body
    except Exception:  # noqa: BLE001 - black cannot lay it out: the line stays
        return None
    written = formatted.splitlines()[:-1] if headed else formatted.splitlines()
    if len(body) != 1 or type(body[0]) is not type(statement):
        return None
    if any(len(line) > width for line in written):
        return None
    return body[0].with_changes(leading_lines=statement.leading_lines)


class _Replace(cst.CSTTransformer):
    """Puts each statement's new layout in its place."""

    def __init__(self, layouts: dict[cst.CSTNode, cst.CSTNode]):
        self._layouts = layouts

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        layout = self._layouts.get(original_node)
        if layout is None:
            return updated_node
        if isinstance(layout, _HEADED):
            # The new header over the block (and `else:`) as they are.
            kept = {"body": updated_node.body}
            for name in ("orelse", "decorators", "lines_after_decorators"):
                if hasattr(updated_node, name):
                    kept[name] = getattr(updated_node, name)
            return layout.with_changes(**kept)
        return layout


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How one node is split: its continuation and closing spaces."""

    inner: str  # After the block's own indentation, before each new line's text.
    closing: str  # Before the closing parenthesis.
    per_argument: bool  # One argument per line (else all on one line).


@dataclasses.dataclass
class _Candidate:
    node: cst.BaseExpression = dataclasses.field(repr=False)
    head: int  # Length of the first line: up to and including the "(".
    body: int  # Length of the one continuation line holding all the arguments.
    tail: int  # Length of the last line: the ")" and the rest of the line.
    plan: _Plan
    # Only closing brackets, commas or a comment after the ")": a split
    # before more arguments of an outer call would read worse.
    ends_fit: bool = True
    # Each argument's line length if one per line, and whether it is a call.
    arguments: list[tuple[int, bool]] = dataclasses.field(default_factory=list)


def _leading_space(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _new_line(space: str) -> cst.ParenthesizedWhitespace:
    """A line break, then the block's indentation and `space`."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=True,
        last_line=cst.SimpleWhitespace(space),
    )


class _Planner(cst.CSTVisitor):
    """Collects, for each long line, the calls and values that may be split."""

    def __init__(
        self,
        wrapper: metadata.MetadataWrapper,
        long_lines: set[int],
        lines: list[str],
        limit: int,
    ):
        self._module = wrapper.module
        self._positions = wrapper.resolve(metadata.PositionProvider)
        self._parents = wrapper.resolve(metadata.ParentNodeProvider)
        self._long_lines = long_lines
        self._lines = lines
        self._limit = limit
        self._unit = wrapper.module.default_indent
        self._blocks = [""]
        self._in_simple_statement = 0
        # Line number -> calls that may be split, outermost first.
        self._calls: dict[int, list[_Candidate]] = {}
        # Line number -> an assigned or returned value that is not a call.
        self._values: dict[int, _Candidate] = {}

    def choose(self) -> dict[cst.CSTNode, _Plan]:
        """One split per long line: the first call that can take one, else the value."""
        chosen: dict[cst.CSTNode, _Plan] = {}
        for number in self._long_lines:
            for candidate in self._calls.get(number, []):
                plan = self._call_plan(candidate)
                if plan is not None:
                    chosen[candidate.node] = plan
                    break
            else:
                value = self._values.get(number)
                if value is not None and max(value.head, value.body, value.tail) <= self._limit:
                    chosen[value.node] = value.plan
        return chosen

    def _call_plan(self, candidate: _Candidate) -> _Plan | None:
        """Hanging if the arguments fit one line, else one per line, else None.

        A split is worth it only if every line it writes fits, or is an
        argument that is itself a call (split in the next round).
        """
        if not candidate.ends_fit or max(candidate.head, candidate.tail) > self._limit:
            return None
        hanging = dataclasses.replace(candidate.plan, per_argument=False)
        if candidate.body <= self._limit:
            return hanging
        arguments = candidate.arguments
        if len(arguments) == 1:
            return hanging if arguments[0][1] else None
        if all(length <= self._limit or splits for length, splits in arguments):
            return candidate.plan
        return None

    def _single_line(self, node: cst.CSTNode) -> int | None:
        """The node's line if it starts and ends on one long line."""
        position = self._positions[node]
        if position.start.line != position.end.line or position.start.line not in self._long_lines:
            return None
        return position.start.line

    def _spaces(self, number: int) -> tuple[str, str] | None:
        leading = _leading_space(self._lines[number - 1])
        block = self._blocks[-1]
        if not leading.startswith(block):
            return None
        closing = leading[len(block) :]
        return closing + self._unit, closing

    def _is_outermost(self, node: cst.CSTNode, number: int) -> bool:
        """Whether `node` heads its line: nothing but calls' arguments around it."""
        while True:
            parent = self._parents[node]
            if isinstance(parent, (cst.Arg, cst.Element)) and parent.value is node:
                container = self._parents[parent]
                if self._single_line(container) == number:
                    if not isinstance(container, cst.Call):
                        return False  # `[f(x), g(y)]` on one line: the list is the line.
                    node = container
                    continue
                # An argument or element of what the user wrote over several
                # lines, if it starts the line.
                line = self._lines[number - 1]
                return self._positions[parent].start.column == len(_leading_space(line))
            if isinstance(parent, cst.Expr):
                return True
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
                return parent.value is node
            if isinstance(parent, cst.Raise):
                return parent.exc is node
            return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._in_simple_statement += 1

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._in_simple_statement -= 1

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        indent = node.indent if node.indent is not None else self._unit
        self._blocks.append(self._blocks[-1] + indent)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._blocks.pop()

    # A line break inside an f-string's braces is an error before Python 3.12;
    # lambdas and comprehensions read worse split.
    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return False

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return False

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return False

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        number = self._single_line(node)
        if (
            number is None
            or not node.args
            or not self._in_simple_statement
            or not self._is_outermost(node, number)
        ):
            return
        spaces = self._spaces(number)
        if spaces is None:
            return
        line = self._lines[number - 1]
        position = self._positions[node]
        # Positions leave out the call's own parentheses, not its callee's.
        open_paren = (
            position.start.column
            + len(self._module.code_for_node(node.func))
            + len(self._module.code_for_node(node.whitespace_after_func))
        )
        close_paren = position.end.column - 1
        candidate = self._candidate(node, line, open_paren, close_paren, spaces, per_argument=True)
        start = len(_leading_space(line)) - len(candidate.plan.closing)
        for arg in node.args:
            where = self._positions[arg]
            length = start + len(candidate.plan.inner) + where.end.column - where.start.column + 1
            splits = isinstance(arg.value, cst.Call) and not arg.value.lpar
            candidate.arguments.append((length, splits))
        self._calls.setdefault(number, []).append(candidate)

    def _candidate(
        self,
        node: cst.BaseExpression,
        line: str,
        open_paren: int,
        close_paren: int,
        spaces: tuple[str, str],
        per_argument: bool,
    ) -> _Candidate:
        inner, closing = spaces
        block = len(_leading_space(line)) - len(closing)
        body = line[open_paren + 1 : close_paren].strip()
        return _Candidate(
            node=node,
            head=open_paren + 1,
            body=block + len(inner) + len(body),
            tail=block + len(closing) + len(line) - close_paren,
            plan=_Plan(inner, closing, per_argument),
            ends_fit=_CLOSING_ONLY.match(line, close_paren + 1) is not None,
        )

    def _consider(self, node: cst.CSTNode) -> None:
        value = getattr(node, "value", None)
        if not isinstance(value, _VALUES) or value.lpar or not self._in_simple_statement:
            return
        number = self._single_line(value)
        spaces = None if number is None else self._spaces(number)
        if number is None or spaces is None:
            return
        position = self._positions[value]
        line = self._lines[number - 1]
        # The value gets a "(" before it and a ")" after it.
        candidate = self._candidate(
            value,
            line[: position.start.column] + "(" + line[position.start.column :],
            position.start.column,
            position.end.column + 1,
            spaces,
            per_argument=False,
        )
        candidate.tail += 1  # The ")" the value gets.
        self._values[number] = candidate

    def visit_Assign(self, node: cst.Assign) -> None:
        self._consider(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._consider(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._consider(node)

    def visit_Return(self, node: cst.Return) -> None:
        self._consider(node)


class _Split(cst.CSTTransformer):
    """Writes each chosen call or value over several lines."""

    def __init__(self, plans: dict[cst.CSTNode, _Plan]):
        self._plans = plans

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        plan = self._plans.get(original_node)
        if plan is None or isinstance(updated_node, cst.Call):
            return updated_node
        return updated_node.with_changes(
            lpar=[cst.LeftParen(whitespace_after=_new_line(plan.inner))],
            rpar=[cst.RightParen(whitespace_before=_new_line(plan.closing))],
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        plan = self._plans.get(original_node)
        if plan is None:
            return updated_node
        args = list(updated_node.args)
        last = len(args) - 1
        for index, arg in enumerate(args):
            comma = arg.comma
            if plan.per_argument and not isinstance(comma, cst.Comma) and index < last:
                comma = cst.Comma()
            if isinstance(comma, cst.Comma) and (plan.per_argument or index == last):
                comma = comma.with_changes(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                )
            after: cst.BaseParenthesizableWhitespace
            if index == last:
                after = _new_line(plan.closing)
            elif plan.per_argument:
                after = _new_line(plan.inner)
            else:
                after = arg.whitespace_after_arg
            args[index] = arg.with_changes(comma=comma, whitespace_after_arg=after)
        return updated_node.with_changes(whitespace_before_args=_new_line(plan.inner), args=args)
