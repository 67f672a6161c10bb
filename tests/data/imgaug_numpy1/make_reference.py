# SPDX-License-Identifier: Apache-2.0
"""Writes reference.npz: imgaug 0.4.0's arrays under NumPy 1, for tests/compat/test_imgaug.py.

Run in a NumPy 1 environment without TensorFlow (no parallel_keras import):
    python -m venv /tmp/np1env
    /tmp/np1env/bin/pip install "numpy<2" scipy scikit-image opencv-python-headless \
        pillow imageio shapely six matplotlib
    /tmp/np1env/bin/pip install --no-deps imgaug==0.4.0 opencv-python-headless==5.0.0.93
    /tmp/np1env/bin/python tests/data/imgaug_numpy1/make_reference.py
Written with numpy 1.26.4, scipy 1.17.1, scikit-image 0.26.0 and OpenCV 5.0.0 (the
versions beside NumPy 2.4 in the test environment: OpenCV 4.11 interpolates
differently in warpAffine/warpPerspective/remap, whatever NumPy is).
"""

from __future__ import annotations

import os
import sys

import numpy as np

# NumPy < 1.24 had np.complex and np.bool (the builtins); 1.24-1.26 removed
# them and imgaug 0.4.0 still reads them: restore them, as NumPy 1.23 had them.
np.complex = complex  # type: ignore[attr-defined]
np.bool = bool  # type: ignore[attr-defined]

import imgaug as ia  # noqa: E402
from imgaug import augmenters as iaa  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402

if __name__ == "__main__":
    assert np.__version__.startswith("1."), np.__version__
    result = cases.run(iaa, ia)
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.npz")
    np.savez_compressed(target, numpy_version=np.array(np.__version__), **result)
    print(f"wrote {len(result)} arrays to {target}")
