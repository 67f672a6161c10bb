# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.compat.imgaug: imgaug 0.4.0 imports and runs under NumPy 2 with NumPy 1's values.

tests/data/imgaug_numpy1/reference.npz holds imgaug 0.4.0's arrays under
NumPy 1.26.4 (written by make_reference.py there, in a NumPy 1 environment)
for the augmenters of tests/data/imgaug_numpy1/cases.py, with fixed seeds.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

# imgaug's own warning class breaks pytest-xdist's controller (see conftest).
pytestmark = pytest.mark.usefixtures("imgaug_warnings_stay_in_the_worker")

if importlib.util.find_spec("imgaug") is None:  # importing it plainly fails under NumPy 2
    pytest.skip(
        "imgaug 0.4.0 is not installed (pip install imgaug==0.4.0)", allow_module_level=True
    )

_DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "imgaug_numpy1")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# NumPy 2's scalar promotion (NEP 50): a float32 sample times a Python number
# stays float32 (NumPy 1: float64), so Affine's matrix is computed in float32.
# Not a name imgaug reads; the arrays differ by at most one grey level.
_NEP50 = {"affine/batch": 1.0, "affine/float32": 1e-5}


def _run_in_subprocess(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=_ROOT)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.subprocess
@pytest.mark.skipif(hasattr(np, "sctypes"), reason="NumPy 1: imgaug imports as it is")
def test_plain_imgaug_import_fails_under_numpy2_and_the_compat_path_imports_it():
    plain = _run_in_subprocess("import imgaug")
    assert plain.returncode != 0 and "sctypes" in plain.stderr
    compat = _run_in_subprocess(
        "import numpy as np\n"
        "from parallel_keras.compat.imgaug import augmenters as iaa\n"
        "import imgaug, imgaug.imgaug as core\n"
        "assert not hasattr(np, 'sctypes'), 'NumPy itself was changed'\n"
        "print(sorted(t.__name__ for t in core.NP_FLOAT_TYPES), iaa is imgaug.augmenters)\n"
    )
    assert compat.returncode == 0, compat.stderr
    assert compat.stdout.split() == [
        "['float16',",
        "'float32',",
        "'float64',",
        "'longdouble']",
        "True",
    ]


def test_numpy1_names_are_numpy1s_values():
    sctypes = importlib.import_module("parallel_keras.compat._numpy1").sctypes()
    assert sctypes["int"] == [np.int8, np.int16, np.int32, np.int64]
    assert sctypes["uint"] == [np.uint8, np.uint16, np.uint32, np.uint64]
    assert sctypes["float"][:3] == [np.float16, np.float32, np.float64]
    assert sctypes["complex"][:2] == [np.complex64, np.complex128]
    assert sctypes["others"] == [bool, object, bytes, str, np.void]
    if hasattr(np, "sctypes"):  # NumPy 1: the same dict NumPy built
        assert sctypes == np.sctypes


def test_augmenters_give_numpy1s_arrays_with_fixed_seeds():
    from parallel_keras.compat import imgaug as ia
    from parallel_keras.compat.imgaug import augmenters as iaa

    sys.path.insert(0, _DATA)
    try:
        cases = importlib.import_module("cases")
    finally:
        sys.path.remove(_DATA)
    got = cases.run(iaa, ia)
    reference = np.load(os.path.join(_DATA, "reference.npz"))
    assert str(reference["numpy_version"]).startswith("1.")
    assert set(got) == set(reference.files) - {"numpy_version"}
    for name, array in got.items():
        expected = reference[name]
        assert array.dtype == expected.dtype and array.shape == expected.shape, name
        if name in _NEP50:
            np.testing.assert_allclose(array, expected, rtol=0, atol=_NEP50[name], err_msg=name)
        else:
            np.testing.assert_array_equal(array, expected, err_msg=name)


def test_chexnet_augmenter_flips_half_the_batch_like_numpy1():
    from parallel_keras.compat import imgaug as ia
    from parallel_keras.compat.imgaug import augmenters as iaa

    images = np.arange(6 * 4 * 5 * 3, dtype=np.uint8).reshape(6, 4, 5, 3)
    ia.seed(7)
    out = iaa.Sequential([iaa.Fliplr(0.5)], random_order=True).augment_images(images)
    flipped = [bool(np.array_equal(o, i[:, ::-1])) for o, i in zip(out, images)]
    kept = [bool(np.array_equal(o, i)) for o, i in zip(out, images)]
    assert all(f != k for f, k in zip(flipped, kept))
    assert 0 < sum(flipped) < len(images)


def test_submodule_aliases_are_imgaugs_own_modules():
    import imgaug.augmenters.meta

    import parallel_keras.compat.imgaug.augmenters.meta as meta
    from parallel_keras.compat.imgaug.augmenters import Fliplr

    assert meta is imgaug.augmenters.meta
    assert Fliplr is imgaug.augmenters.Fliplr
