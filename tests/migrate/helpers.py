# SPDX-License-Identifier: Apache-2.0
"""Shared by the rule tests: migrate a snippet, check before/after, twice."""

from __future__ import annotations

import textwrap

from parallel_keras import migrate


def run(before: str) -> migrate.MigrationResult:
    return migrate.migrate_source(textwrap.dedent(before), "script.py")


def check_rewrite(before: str, after: str) -> migrate.MigrationResult:
    """Asserts the rewrite, and that a second run changes nothing."""
    result = run(before)
    assert result.migrated == textwrap.dedent(after)
    assert run(result.migrated).migrated == result.migrated
    return result


def check_flag(before: str, *words: str) -> migrate.MigrationResult:
    """Asserts a flag whose action holds `words`, the code kept, and idempotence."""
    result = run(before)
    actions = " ".join(flag.action for flag in result.report.flags)
    for word in words:
        assert word in actions, (word, actions)
    second = run(result.migrated)
    assert second.migrated == result.migrated
    assert len(second.report.flags) == len(result.report.flags)
    return result


def run_rules(before: str, *rules: type, project=None) -> migrate.MigrationResult:
    """Migrates a snippet with only `rules` (classes), as the engine applies them."""
    return migrate.migrate_source(
        textwrap.dedent(before),
        "script.py",
        rules=[rule() for rule in rules],
        project=project,
    )


def check_rules(before: str, after: str, *rules: type, project=None) -> migrate.MigrationResult:
    """Asserts `rules` rewrite `before` to `after`, and change nothing on a second run.

    A second run must record no change and carry every flag of the first
    (as the note it left in the code).
    """
    result = run_rules(before, *rules, project=project)
    assert result.migrated == textwrap.dedent(after)
    again = run_rules(result.migrated, *rules, project=project)
    assert again.migrated == result.migrated
    assert not again.report.changes, again.report.changes
    assert len(again.report.flags) == len(result.report.flags)
    return result


def changes(result: migrate.MigrationResult, rule: str) -> list[tuple[int, str]]:
    """(line, message) of each change `rule` recorded."""
    return [
        (change.line, change.message) for change in result.report.changes if change.rule == rule
    ]


def flags(result: migrate.MigrationResult, rule: str) -> list[tuple[int, str, str]]:
    """(line, message, action) of each flag `rule` raised."""
    return [
        (flag.line, flag.message, flag.action) for flag in result.report.flags if flag.rule == rule
    ]
