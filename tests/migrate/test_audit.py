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
        for name, becomes, reason, *modern in rows:
            assert name and reason and (becomes is None or becomes)
            # A compatibility row names its target and the modern form.
            assert len(modern) <= 1 and (not modern or (becomes and modern[0]))
