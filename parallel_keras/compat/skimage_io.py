# SPDX-License-Identifier: Apache-2.0
"""scikit-image's `io.imsave` as Keras 2-era scripts used it (scikit-image 0.14).

scikit-image 0.14 (2018) saved through Pillow (`skimage/io/_plugins/
pil_plugin.py`, `ndarray_to_pil`): a colour image (M, N, 3 or 4) of any
dtype went through `img_as_ubyte` (a float image in [0, 1] became
`rint(x * 255)`), a 2-D float PNG through `img_as_uint` (16 bits), other 2-D
images through `img_as_ubyte`, and a boolean image was saved as 0 and 1.
scikit-image 0.20+ hands the array to its writer as it is, and Pillow
refuses a float colour image ("Cannot handle this data type: (1, 1, 3),
<f8"). `imsave` here converts as 0.14 did, with scikit-image's own
`img_as_ubyte`/`img_as_uint` (unchanged since), then calls today's
`skimage.io.imsave`. Every other name is `skimage.io`'s.

Modernise: convert explicitly, `skimage.io.imsave(path,
skimage.util.img_as_ubyte(image))`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def _keras2_era_array(fname: Any, arr: Any) -> np.ndarray:
    from skimage import util

    arr = np.asanyarray(arr)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.uint8)  # 0.14: True saved as 1
    if arr.ndim == 3:
        return util.img_as_ubyte(arr)
    png = not isinstance(fname, (str, os.PathLike)) or os.fspath(fname).lower().endswith(".png")
    if png:
        if arr.dtype.kind == "f":
            return util.img_as_uint(arr)
        if arr.max() < 256 and arr.min() >= 0:
            return arr.astype(np.uint8)
        return util.img_as_uint(arr)
    return util.img_as_ubyte(arr)


def imsave(fname: Any, arr: Any, plugin: str | None = None, **plugin_args: Any) -> Any:
    """scikit-image 0.14's `io.imsave`: the array converted as its Pillow plugin did.

    Args:
        fname: The file to write (a `.tif`/`.tiff` goes to tifffile unconverted,
            as in 0.14).
        arr: The image: (M, N), (M, N, 3) or (M, N, 4), any dtype.
        plugin: A scikit-image plugin name; given, the array is passed on
            unconverted, as 0.14 did for a plugin other than Pillow.
        **plugin_args: Passed on to `skimage.io.imsave`.

    Returns:
        What `skimage.io.imsave` returns.
    """
    from skimage import io

    tiff = isinstance(fname, (str, os.PathLike)) and os.fspath(fname).lower().endswith(
        (".tiff", ".tif")
    )
    if plugin is None and not tiff:
        arr = _keras2_era_array(fname, arr)
    if plugin is not None:
        plugin_args["plugin"] = plugin
    return io.imsave(fname, arr, **plugin_args)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # Module protocol (doctest's `__test__`, ...): not skimage's.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from skimage import io

    return getattr(io, name)
