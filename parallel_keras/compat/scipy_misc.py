# SPDX-License-Identifier: Apache-2.0
"""SciPy's removed image helpers (`scipy.misc.imread`, `imresize`, `imsave`).

SciPy 1.2 removed them (they were thin layers over Pillow, deprecated since
1.0). Keras 2-era training scripts call them to load, resize and save
images, and their results differ from a bare Pillow call in ways that change
the numbers a model sees: `imresize` first byte-scales any array that is not
`uint8` (its minimum to 0, its maximum to 255), takes an int size as a
percentage and a float as a fraction, and returns `uint8`; `imread` turns
palette images into RGB(A) pixels. These functions reproduce SciPy 1.1's
behaviour on Pillow, so `parallel-keras migrate` can point
`scipy.misc.imresize(...)` here and the script sees the same pixels.

To modernise later: read with `numpy.asarray(PIL.Image.open(path))` (or
`imageio.v3.imread`), resize with
`numpy.asarray(PIL.Image.fromarray(x).resize((width, height), PIL.Image.BILINEAR))`
on `uint8` arrays (scale float images to 0-255 yourself first), save with
`PIL.Image.fromarray(x).save(path)`.

Pillow is needed (`pip install pillow`); it is imported when a function runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# SciPy's names for Pillow's resampling filters (Pillow's integer codes).
_RESAMPLE = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "cubic": 3}


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError(
            "parallel_keras.compat.scipy_misc reads, resizes and saves images with Pillow, which is "
            "not installed. Received: no module named PIL. Install it: pip install pillow"
        ) from error
    return Image


def bytescale(data: np.ndarray, cmin=None, cmax=None, high: int = 255, low: int = 0):
    """Scales `data` linearly onto `low..high` as uint8; uint8 data is returned as is.

    Args:
        data: The image array.
        cmin: The value mapped to `low`. Defaults to None: `data.min()`.
        cmax: The value mapped to `high`. Defaults to None: `data.max()`.
        high: Top of the output range. Defaults to 255.
        low: Bottom of the output range. Defaults to 0.

    Returns:
        A uint8 array of `data`'s shape.

    Example:

    >>> bytescale(np.array([0.0, 0.5, 1.0])).tolist()
    [0, 128, 255]
    """
    data = np.asarray(data)
    if data.dtype == np.uint8:
        return data
    if not 0 <= low <= high <= 255:
        raise ValueError(
            f"bytescale needs 0 <= low <= high <= 255. Received: low={low}, high={high}."
        )
    cmin = data.min() if cmin is None else cmin
    cmax = data.max() if cmax is None else cmax
    span = cmax - cmin
    if span < 0:
        raise ValueError(f"bytescale needs cmax >= cmin. Received: cmin={cmin}, cmax={cmax}.")
    scale = float(high - low) / (span if span != 0 else 1)
    scaled = (data - cmin) * scale + low
    return (scaled.clip(low, high) + 0.5).astype(np.uint8)


def _channel_axis(shape: list[int]) -> int:
    for channels in (3, 4):
        if channels in shape:
            return shape.index(channels)
    raise ValueError(
        "An image array of 3 dimensions needs one of 3 or 4 channels. "
        f"Received: shape={tuple(shape)}."
    )


def toimage(arr, mode: str | None = None, channel_axis: int | None = None):
    """The Pillow image SciPy made of an array (byte-scaled unless uint8).

    A 2-D array becomes an 'L' image (or 'F' / 'I' when `mode` says so); a
    3-D array with 3 or 4 channels on `channel_axis` (the first axis of
    size 3, else 4, when None) becomes 'RGB' or 'RGBA'.

    Args:
        arr: The image array.
        mode: Pillow mode. Defaults to None: from the shape.
        channel_axis: Axis of the channels of a 3-D array. Defaults to None.

    Returns:
        A `PIL.Image.Image`.
    """
    image_lib = _pillow()
    data = np.asarray(arr)
    if np.iscomplexobj(data):
        raise ValueError("An image cannot be made of a complex array. Received: complex data.")
    shape = list(data.shape)
    if data.ndim == 2:
        size = (shape[1], shape[0])
        if mode == "F":
            return image_lib.frombytes("F", size, data.astype(np.float32).tobytes())
        if mode in (None, "L", "P"):
            image = image_lib.frombytes("L", size, bytescale(data).tobytes())
            if mode == "P":
                ramp = np.arange(256, dtype=np.uint8)[:, np.newaxis] * np.ones(3, np.uint8)
                image.putpalette(ramp.tobytes())
            return image
        if mode == "1":
            return image_lib.frombytes("1", size, (data > 255).tobytes())
        if mode == "I":
            low, high = data.min(), data.max()
            scaled = (data * 1.0 - low) * 255 / (high - low)
            return image_lib.frombytes("I", size, scaled.astype(np.uint32).tobytes())
        raise ValueError(
            f"A 2-D image array takes mode None, 'L', 'P', 'F', '1' or 'I'. Received: mode={mode!r}."
        )
    if data.ndim != 3:
        raise ValueError(f"An image array has 2 or 3 dimensions. Received: shape={tuple(shape)}.")
    axis = _channel_axis(shape) if channel_axis is None else channel_axis
    channels = shape[axis]
    pixels = np.moveaxis(bytescale(data), axis, 2)
    mode = mode or ("RGB" if channels == 3 else "RGBA")
    expected = {"RGB": 3, "YCbCr": 3, "RGBA": 4, "CMYK": 4}.get(mode)
    if expected != channels:
        raise ValueError(
            f"Mode {mode!r} does not match {channels} channels. Received: shape={tuple(shape)}."
        )
    return image_lib.frombytes(mode, (pixels.shape[1], pixels.shape[0]), pixels.tobytes())


def fromimage(image, flatten: bool = False, mode: str | None = None) -> np.ndarray:
    """The array SciPy read from a Pillow image (palette images as RGB/RGBA pixels)."""
    if mode is not None:
        if mode != image.mode:
            image = image.convert(mode)
    elif image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if flatten:
        image = image.convert("F")
    elif image.mode == "1":
        image = image.convert("L")
    return np.array(image)


def imread(name, flatten: bool = False, mode: str | None = None) -> np.ndarray:
    """`scipy.misc.imread`: an image file as an array.

    Args:
        name: Path or file object.
        flatten: Grey levels as float32 ('F'). Defaults to False.
        mode: Pillow mode to convert to ('RGB', 'L', ...). Defaults to None.

    Returns:
        The pixels: (H, W) or (H, W, channels).
    """
    return fromimage(_pillow().open(name), flatten=flatten, mode=mode)


def imresize(arr, size, interp: str = "bilinear", mode: str | None = None) -> np.ndarray:
    """`scipy.misc.imresize`: resizes an image array, returning uint8.

    Args:
        arr: The image array; anything but uint8 is byte-scaled first.
        size: An int (percent of the size), a float (fraction of the size),
            or a tuple `(height, width[, channels])`.
        interp: 'nearest', 'lanczos', 'bilinear', 'bicubic' or 'cubic'.
            Defaults to 'bilinear'.
        mode: Pillow mode of the image made of `arr`. Defaults to None.

    Returns:
        The resized pixels as uint8.

    Example:

    >>> imresize(np.zeros((4, 6), np.uint8), (2, 3)).shape
    (2, 3)
    """
    if interp not in _RESAMPLE:
        raise ValueError(
            f"imresize interpolates with one of {sorted(_RESAMPLE)}. Received: interp={interp!r}."
        )
    image = toimage(arr, mode=mode)
    if np.issubdtype(type(size), np.signedinteger):
        new_size = tuple((np.array(image.size) * (size / 100.0)).astype(int))
    elif np.issubdtype(type(size), np.floating):
        new_size = tuple((np.array(image.size) * size).astype(int))
    else:
        new_size = (size[1], size[0])
    return fromimage(image.resize(new_size, resample=_RESAMPLE[interp]))


def imsave(name, arr, format: str | None = None) -> None:
    """`scipy.misc.imsave`: saves an image array (byte-scaled unless uint8)."""
    image = toimage(arr, channel_axis=2)
    if format is None:
        image.save(name)
    else:
        image.save(name, format)
