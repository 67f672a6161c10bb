# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.compat.skopt: scikit-optimize 0.10.2's GBRT search on today's scikit-learn and NumPy."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

if importlib.util.find_spec("skopt") is None:
    pytest.skip("scikit-optimize is not installed", allow_module_level=True)

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _objective(x):
    return (x[0] - 0.3) ** 2 + 0.1 * x[1]


@pytest.mark.subprocess
def test_plain_gbrt_minimize_fails_on_scikit_learn_1_6_and_numpy_2_4():
    import sklearn

    if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 6) and hasattr(np, "in1d"):
        pytest.skip("older scikit-learn and NumPy: skopt runs as it is")
    code = (
        "from skopt import gbrt_minimize\n"
        "gbrt_minimize(lambda x: x[0] ** 2, [(0.0, 1.0)], n_calls=12, random_state=0)\n"
    )
    env = dict(os.environ, PYTHONPATH=_ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "has to be a regressor" in done.stderr or "in1d" in done.stderr


def test_gbrt_minimize_searches_with_skopts_own_surrogate():
    from sklearn.base import is_regressor

    from parallel_keras.compat.skopt import gbrt_minimize
    from parallel_keras.compat.skopt.learning import GradientBoostingQuantileRegressor

    assert is_regressor(GradientBoostingQuantileRegressor())
    space = [(0.0, 1.0), (0, 3)]
    result = gbrt_minimize(_objective, space, n_calls=14, n_random_starts=10, random_state=0)
    assert len(result.x_iters) == 14 and len(result.models) == 5  # fitted from the 10th on
    assert result.fun == min(result.func_vals) and result.fun < 0.05
    again = gbrt_minimize(_objective, space, n_calls=14, n_random_starts=10, random_state=0)
    assert again.x_iters == result.x_iters  # the same random state, the same trials
    # The surrogate predicts its quantile models' own values, as skopt defines it.
    model = result.models[-1]
    points = np.asarray(result.space.transform(result.x_iters[:5]))
    low, mid, high = (q.predict(points) for q in model.regressors_)
    mean, std = model.predict(points, return_std=True)
    np.testing.assert_allclose(mean, mid)
    np.testing.assert_allclose(std, (high - low) / 2.0)


def test_in1d_is_numpy1s_flat_membership():
    from parallel_keras.compat import _numpy1

    a = np.array([[0, 1], [2, 5]])
    np.testing.assert_array_equal(_numpy1._in1d(a, [1, 5]), [False, True, False, True])
    np.testing.assert_array_equal(_numpy1._in1d(a, [1, 5], invert=True), [True, False, True, False])
