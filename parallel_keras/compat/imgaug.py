# SPDX-License-Identifier: Apache-2.0
"""imgaug 0.4.0 as Keras 2-era scripts ran it, under NumPy 2.

imgaug 0.4.0 (2020) is the last release of an unmaintained package. It
reads NumPy names NumPy removed: `np.sctypes` (NumPy 2.0) when
`imgaug.imgaug` is imported, so `import imgaug` fails; `np.complex`
(NumPy 1.24) in `imgaug.parameters` (`Power` of negative bases,
`FrequencyNoise`); and `np.bool` (NumPy 1.24; NumPy 2 has it again, as
`np.bool_`) in `SomeOf` and polygons. Every other NumPy name it reads has the
same value in NumPy 1 and 2 (checked by scanning its sources).

Importing this module makes `import imgaug` work: each `imgaug` module, and
only those, sees `numpy` with NumPy 1's values for the names NumPy removed
(`_numpy1`: `sctypes` the same dict of NumPy's own type objects NumPy 1
built, `complex` and `bool` the builtins). NumPy itself is not changed. The
process-wide state is two finders at the front of `sys.meta_path`: one
answers only for `imgaug` and its submodules (each loaded from its own file
as usual), one for `parallel_keras.compat.imgaug.<submodule>` (the same
module object as `imgaug.<submodule>`). Every name here is imgaug's own:
`from parallel_keras.compat.imgaug import augmenters as iaa` gives
`imgaug.augmenters`.

Checked: 44 augmenters (tests/data/imgaug_numpy1) with fixed seeds give
imgaug's arrays under NumPy 1.26.4 exactly, but `Affine`: NumPy 2's scalar
promotion (NEP 50: a float32 sample times a Python number stays float32;
NumPy 1 made it float64) computes its matrix in float32, so rare pixels
differ by one grey level (float images by ~1e-6). No NumPy name gives that
back.

Modernise: albumentations (`iaa.Fliplr(0.5)` -> `A.HorizontalFlip(p=0.5)`,
`iaa.Affine` -> `A.Affine`, `iaa.Sequential` -> `A.Compose`) or Keras 3
preprocessing layers (`keras.layers.RandomFlip`, `RandomRotation`,
`RandomZoom`).
"""

from __future__ import annotations

import importlib
from typing import Any

from parallel_keras.compat import _aliases, _numpy1

_PACKAGE = "imgaug"
# A package path, so that `import parallel_keras.compat.imgaug.augmenters`
# asks the alias finder (`_aliases`).
__path__: list[str] = []

_numpy1.install(_PACKAGE)
_aliases.install(__name__, _PACKAGE)


def __getattr__(name: str) -> Any:
    return _aliases.package_attribute(_PACKAGE, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(importlib.import_module(_PACKAGE))))
