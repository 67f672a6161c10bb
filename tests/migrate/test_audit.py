# SPDX-License-Identifier: Apache-2.0
"""Tests of migrate/audit.py: the committed docs/migrate-names.md is current."""

from __future__ import annotations

import pathlib

from parallel_keras.migrate import audit


def test_committed_table_is_current():
    committed = pathlib.Path(__file__).parents[2] / "docs" / "migrate-names.md"
    assert committed.read_text() == audit.render(), (
        "docs/migrate-names.md is stale: run "
        "`python -m parallel_keras.migrate.audit > docs/migrate-names.md`"
    )


def test_rows_are_well_formed():
    tables = audit.collect()
    assert {"tf1_names", "numpy2", "layer_api", "model_api", "imports"} <= set(tables)
    for rows in tables.values():
        for row in rows:
            assert row.name and row.reason and (row.becomes is None or row.becomes)
            # A compatibility row names where it runs and its modern form.
            assert row.modern is None or (row.becomes is not None and row.modern)


def test_rows_are_counted_by_kind(monkeypatch):
    tables = {
        "example": [
            audit.AuditRow("a", "b", "same meaning"),
            audit.AuditRow("c", "tf.compat.v1.c", "TF1 graph code", "tf.function"),
            audit.AuditRow("d", None, "nothing runs it"),
            audit.AuditRow("e", "(kept)", "still works"),
            audit.AuditRow(*("f", "g", "four fields, no modern form", None)),
        ]
    }
    assert audit.counts(tables) == {"rewritten": 2, "compatibility": 1, "flagged": 1, "kept": 1}
    monkeypatch.setattr(audit, "collect", lambda: tables)
    text = audit.render()
    assert "2 rewritten, 1 through a compatibility path, 1 flagged, 1 kept" in text
    assert "| `c` | `tf.compat.v1.c` (compatibility path; modern form: `tf.function`) |" in text
