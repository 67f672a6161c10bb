# SPDX-License-Identifier: Apache-2.0
"""What `parallel-keras migrate` did to each file, and what a person must do.

Every rewrite records a `Change` (line, what, why) and every pattern that
cannot be rewritten safely records a `Flag` (line, what, what to do). Line
numbers refer to the original file, so the report reads next to the diff.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Change:
    """One rewrite.

    Args:
        line: Line in the original file (in the rewritten file for added
            imports, see `in_output`).
        rule: Short name of the rewrite family, e.g. `"optimizers"`.
        message: What changed and why.
        in_output: True when `line` counts lines of the rewritten file.
            Defaults to False.
        modern: For a rewrite onto a compatibility path (TensorFlow's
            `tf.compat.v1`, the `tf_keras` package's Keras 2 code, or
            `parallel_keras.compat`): the modern form to move to later.
            None for a rewrite to the Keras 3 / TF 2 name itself.
            Defaults to None.
    """

    line: int
    rule: str
    message: str
    in_output: bool = False
    modern: str | None = None

    @property
    def compatibility(self) -> bool:
        """Whether the line now runs through a compatibility path."""
        return self.modern is not None


@dataclasses.dataclass(frozen=True)
class Flag:
    """A pattern left as it was that needs a person.

    Args:
        line: Line in the original file.
        rule: Short name of the rewrite family.
        message: What was found.
        action: What to do about it.
    """

    line: int
    rule: str
    message: str
    action: str


@dataclasses.dataclass
class FileReport:
    """Changes and flags for one file, or the error that stopped it.

    Args:
        path: The file, as given on the command line.
        changes: Rewrites, in line order. Defaults to empty.
        flags: Items left for a person, in line order. Defaults to empty.
        error: Why the file was not migrated (it was left untouched).
            Defaults to None.
        requirements: Packages the migrated file imports (directly or
            through a Keras class, e.g. TensorBoard -> tensorboard) that
            `pip install tensorflow` does not install. Defaults to empty.
    """

    path: str
    changes: list[Change] = dataclasses.field(default_factory=list)
    flags: list[Flag] = dataclasses.field(default_factory=list)
    error: str | None = None
    requirements: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the file was parsed and migrated."""
        return self.error is None

    def sort(self) -> None:
        """Orders changes and flags by line."""
        self.changes.sort(key=lambda change: (change.in_output, change.line))
        self.flags.sort(key=lambda flag: flag.line)


# A data folder may hold thousands of files: the report names the first ones.
_COPIES_LISTED = 20


def format_report(reports: list[FileReport], copied: list[str] | None = None) -> str:
    """Renders reports as the text printed after the diff.

    Each file's block has three kinds of line: what was rewritten to the
    Keras 3 / TF 2 name, what now runs through a compatibility path (with
    its modern form, to move to later), and what needs a person (with what
    to do). The file's header and the summary line count each kind.

    Args:
        reports: One report per file, in the order the files were given.
        copied: Files written to the output unchanged (the folders' other
            files, and Python files nothing was rewritten in), or None when
            nothing was written. Defaults to None.

    Returns:
        Plain text, one block per file and a summary line.

    Example:

    >>> report = FileReport("train.py", [Change(3, "optimizers", "lr= -> learning_rate=")])
    >>> print(format_report([report]))
    train.py: 1 rewritten, 0 through a compatibility path, 0 flagged
      line 3: [optimizers] lr= -> learning_rate=
    <BLANKLINE>
    1 file: 1 rewritten, 0 through a compatibility path, 0 flagged, 0 errors
    """
    blocks = []
    for report in reports:
        if report.error is not None:
            blocks.append(f"{report.path}: ERROR, left untouched: {report.error}")
            continue
        rewritten = [change for change in report.changes if not change.compatibility]
        compatible = [change for change in report.changes if change.compatibility]
        lines = [f"{report.path}: {_counts(len(rewritten), len(compatible), len(report.flags))}"]
        if report.requirements:
            lines.append(
                "  needs packages TensorFlow does not install: pip install "
                + " ".join(report.requirements)
            )
        for change in rewritten:
            lines.append(f"  {_where(change)}: [{change.rule}] {change.message}")
        if compatible:
            lines.append("  runs through a compatibility path (modernise later):")
        for change in compatible:
            lines.append(f"  {_where(change)}: COMPATIBILITY [{change.rule}] {change.message}")
            lines.append(f"    modern form: {change.modern}")
        if report.flags:
            lines.append("  needs a person:")
        for flag in report.flags:
            lines.append(f"  line {flag.line}: FLAGGED [{flag.rule}] {flag.message}")
            lines.append(f"    what to do: {flag.action}")
        blocks.append("\n".join(lines))
    changes = [change for report in reports for change in report.changes]
    compatible_count = sum(1 for change in changes if change.compatibility)
    flags = sum(len(report.flags) for report in reports)
    errors = sum(1 for report in reports if report.error is not None)
    if copied:
        shown = ", ".join(copied[:_COPIES_LISTED])
        if len(copied) > _COPIES_LISTED:
            shown += f", and {len(copied) - _COPIES_LISTED} more"
        blocks.append("copied unchanged: " + shown)
    summary = (
        f"\n{_plural(len(reports), 'file')}: "
        f"{_counts(len(changes) - compatible_count, compatible_count, flags)}, "
        f"{_plural(errors, 'error')}"
    )
    if copied is not None:
        summary += f", {len(copied)} copied unchanged"
    blocks.append(summary)
    return "\n".join(blocks)


def _where(change: Change) -> str:
    if change.in_output:
        return f"line {change.line} of the rewritten file"
    return f"line {change.line}"


def _counts(rewritten: int, compatible: int, flagged: int) -> str:
    return f"{rewritten} rewritten, {compatible} through a compatibility path, {flagged} flagged"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
