# SPDX-License-Identifier: Apache-2.0
"""The benchmark suite: every model x mode x replica count, measured.

From Python (a notebook):

    from benchmarks.suite import QUICK, run_suite
    results = run_suite(QUICK)
    results            # the table
    results.plot()     # the figure

From a shell: `python -m benchmarks --quick`.
"""

from benchmarks.suite.baseline import compare
from benchmarks.suite.config import QUICK, SuiteConfig, plan
from benchmarks.suite.results import SuiteResults
from benchmarks.suite.runner import run_suite

__all__ = ["QUICK", "SuiteConfig", "SuiteResults", "compare", "plan", "run_suite"]
