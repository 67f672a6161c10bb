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
