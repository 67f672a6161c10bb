# SPDX-License-Identifier: Apache-2.0
"""Migrate a Keras 2 snippet, run it on 4 simulated devices and on one, compare."""

from __future__ import annotations

import textwrap

import keras
import numpy as np

from parallel_keras import migrate

# Rules whose flags these snippets must not get (what the compatibility
# paths exist for).
COMPAT_RULES = frozenset(
    {
        "TF1 sessions",
        "image generators",
        "imports",
        "backend ops",
        "save formats",
        "symbolic losses",
        "TF1 names",
        "generators",
        "checkpoints",
    }
)


def migrated(source: str) -> migrate.MigrationResult:
    """The migration of a Keras 2 snippet; it must run through compat paths, unflagged."""
    result = migrate.migrate_source(textwrap.dedent(source), "script.py")
    flagged = [flag for flag in result.report.flags if flag.rule in COMPAT_RULES]
    assert not flagged, flagged
    assert any(change.modern for change in result.report.changes), result.report.changes
    return result


def run(result: migrate.MigrationResult, gpus: int, **names) -> dict:
    """Executes the migrated code with `GPUS = gpus` and the same seeds each time."""
    keras.utils.set_random_seed(7)
    namespace = {"GPUS": gpus, "__name__": "migrated_snippet", **names}
    exec(compile(result.migrated, "script.py", "exec"), namespace)  # noqa: S102
    return namespace


def assert_same_numbers(parallel, single, rtol=1e-5, atol=1e-6):
    """The weights (or arrays) of a 4-device run equal the one-device run's."""
    parallel = parallel.get_weights() if hasattr(parallel, "get_weights") else parallel
    single = single.get_weights() if hasattr(single, "get_weights") else single
    assert len(parallel) == len(single)
    for a, b in zip(parallel, single):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
