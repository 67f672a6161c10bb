# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/numpy2.py: NumPy 2 removals rewritten to exact equivalents."""

from __future__ import annotations

import pytest

from tests.migrate.helpers import check_flag, check_rewrite

REWRITES = {
    "builtin_aliases": (
        "import numpy as np\na = x.astype(np.float) + np.int(3) * np.bool(1)\n",
        "import numpy as np\na = x.astype(float) + int(3) * bool(1)\n",
    ),
    "object_dtype": (
        "import numpy as np\na = np.array(v, dtype=np.object)\n",
        "import numpy as np\na = np.array(v, dtype=object)\n",
    ),
    "constants": (
        "import numpy as np\nbest = np.Inf\nworst = np.NaN\n",
        "import numpy as np\nbest = np.inf\nworst = np.nan\n",
    ),
    "negative_infinity_keeps_precedence": (
        "import numpy as np\ny = np.NINF ** 2\n",
        "import numpy as np\ny = (-np.inf) ** 2\n",
    ),
    "asscalar": (
        "import numpy as np\nv = np.asscalar(a)\n",
        "import numpy as np\nv = np.asarray(a).item()\n",
    ),
    "float_": (
        "import numpy as onp\nv = onp.float_(1)\n",
        "import numpy as onp\nv = onp.float64(1)\n",
    ),
    "product": ("import numpy as np\nv = np.product(s)\n", "import numpy as np\nv = np.prod(s)\n"),
    "other_module_untouched": ("import math\nv = math.Inf\n", "import math\nv = math.Inf\n"),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_rewritten_values_equal_numpy_1_meaning():
    import numpy as np

    # NumPy 1: np.NINF ** 2 == inf, np.float is float, np.asscalar(a) == a.item().
    assert (-np.inf) ** 2 == float("inf")
    assert np.zeros(1, dtype=float).dtype == np.float64
    assert np.asarray(np.array([3.5])[0]).item() == 3.5
    assert type(np.asarray(np.float32(2)).item()) is float


def test_removed_without_equivalent_is_flagged():
    check_flag("import numpy as np\nt = np.find_common_type([a], [])\n", "np.result_type")


def test_meshgrid_lists_stay_lists_as_numpy1_returned_them():
    import numpy as np

    from parallel_keras import migrate

    source = (
        "import numpy as np\n"
        "texts = ['ab', 'cde']\n"
        "indices = [np.meshgrid(np.array(i), np.arange(len(t) + 1)) for i, t in enumerate(texts)]\n"
        "indices = np.block(indices)\n"
        "xx, yy = np.meshgrid(np.arange(2), np.arange(3))\n"
    )
    namespace: dict = {}
    with pytest.raises(TypeError):
        exec(source, namespace)  # noqa: S102  (np.block refuses NumPy 2's tuples)
    result = migrate.migrate_source(source)
    assert "list(np.meshgrid(np.array(i)" in result.migrated
    assert "xx, yy = np.meshgrid(" in result.migrated  # Unpacked: left as it is.
    assert migrate.migrate_source(result.migrated).migrated == result.migrated
    exec(result.migrated, namespace)  # noqa: S102
    assert namespace["indices"].shape == (7, 2)
    np.testing.assert_array_equal(namespace["indices"][:, 0], [0, 0, 0, 1, 1, 1, 1])


def test_a_replacement_the_installed_numpy_lacks_is_not_written(monkeypatch):
    """Under NumPy 1.x (TensorFlow 2.16-2.17) `np.trapezoid` does not exist
    and `np.trapz` still runs: the old name is kept there."""
    import numpy

    from parallel_keras import migrate

    source = "import numpy as np\narea = np.trapz([1, 2, 3])\n"
    if hasattr(numpy, "trapezoid"):
        assert "np.trapezoid(" in migrate.migrate_source(source).migrated
    monkeypatch.delattr(numpy, "trapezoid", raising=False)
    result = migrate.migrate_source(source)
    assert "np.trapz(" in result.migrated
    assert "trapezoid" not in result.migrated
