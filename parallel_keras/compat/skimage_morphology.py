# SPDX-License-Identifier: Apache-2.0
"""scikit-image's `morphology.skeletonize_3d` (removed in 0.25), with its old values.

scikit-image up to 0.22 (`skimage/morphology/_skeletonize_3d.py`) converted
the image with `img_as_ubyte`, thinned its nonzero pixels with Lee's
algorithm (a 2-D image as one slice of a volume) and returned a `uint8`
image holding the input's maximum (255 for a boolean mask) on the skeleton
and 0 elsewhere. scikit-image 0.23 deprecated it and 0.25 removed it;
`skeletonize(image, method="lee")` runs the same thinning but returns a
boolean image, so a script that read the values (`np.float32(skel)` as a
0/255 guiding signal) would see 0/1. `skeletonize_3d` here returns the old
values; every other name is `skimage.morphology`'s.

Modernise: `skimage.morphology.skeletonize(image, method="lee")`, times 255
(or the image's maximum) where the values matter.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def skeletonize_3d(image: Any) -> np.ndarray:
    """scikit-image 0.22's `skeletonize_3d`: Lee's thinning, as `uint8` 0 / max.

    Args:
        image: A 2-D or 3-D image; nonzero pixels (after `img_as_ubyte`)
            are the foreground.

    Returns:
        A `uint8` image of the same shape: the input's maximum (as
        `img_as_ubyte` gives it) on the skeleton, 0 elsewhere.

    Raises:
        ValueError: If the image is not 2-D or 3-D.
    """
    from skimage import morphology, util

    image = np.ascontiguousarray(image)
    if image.ndim not in (2, 3):
        raise ValueError(
            "skeletonize_3d can only handle 2D or 3D images; "
            f"got image.ndim = {image.ndim} instead."
        )
    ubyte = util.img_as_ubyte(image, force_copy=False)
    skeleton = morphology.skeletonize(ubyte != 0, method="lee")
    return skeleton.astype(np.uint8) * ubyte.max()


def __getattr__(name: str) -> Any:
    from skimage import morphology

    return getattr(morphology, name)
