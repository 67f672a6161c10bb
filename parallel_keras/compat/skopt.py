# SPDX-License-Identifier: Apache-2.0
"""scikit-optimize 0.10.2 (its last release) with today's scikit-learn and NumPy.

scikit-optimize is archived; its last release fails with scikit-learn >= 1.6
and NumPy >= 2.4 in its gradient-boosted-trees surrogate (`gbrt_minimize`,
`Optimizer(base_estimator="GBRT")`):

* `GradientBoostingQuantileRegressor(BaseEstimator, RegressorMixin)` lists
  the mixin after `BaseEstimator`. scikit-learn 1.6 reads an estimator's
  type from `__sklearn_tags__`, which `BaseEstimator` answers first without
  the mixin's `estimator_type = "regressor"`, so `is_regressor` is False and
  skopt refuses its own estimator ("... has to be a regressor"). Earlier
  scikit-learn read the mixin's `_estimator_type`, whatever the order.
  Here the class lists its bases in scikit-learn's documented order
  (`RegressorMixin, BaseEstimator`); its `fit`/`predict` are unchanged.
* Its `predict` calls `np.in1d`, removed in NumPy 2.4: skopt's modules are
  loaded with NumPy 1's names (`_numpy1`, as for imgaug).

Only that class is changed (and only while its bases are 0.10.2's). Every
name here is scikit-optimize's own (`from parallel_keras.compat.skopt import
gbrt_minimize` gives `skopt.gbrt_minimize`).

Modernise: Optuna or scikit-optimize's `forest_minimize`/`gp_minimize`
(which run on today's scikit-learn).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from parallel_keras.compat import _aliases, _numpy1

_PACKAGE = "skopt"
# A package path, so that `from parallel_keras.compat.skopt.plots import ...`
# asks the alias finder (`_aliases`).
__path__: list[str] = []


def _fix() -> None:
    from sklearn.base import BaseEstimator, RegressorMixin

    gbrt = importlib.import_module("skopt.learning.gbrt")
    cls = gbrt.GradientBoostingQuantileRegressor
    if cls.__bases__ == (BaseEstimator, RegressorMixin):
        cls.__bases__ = (RegressorMixin, BaseEstimator)


_numpy1.install(_PACKAGE)
if importlib.util.find_spec(_PACKAGE) is not None:  # else: its names raise ImportError
    _fix()
_aliases.install(__name__, _PACKAGE)


def __getattr__(name: str) -> Any:
    return _aliases.package_attribute(_PACKAGE, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(importlib.import_module(_PACKAGE))))
