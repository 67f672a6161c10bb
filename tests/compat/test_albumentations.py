# SPDX-License-Identifier: Apache-2.0
"""parallel_keras.compat.albumentations: albumentations 0.x-1.3 transforms, pixel for pixel.

IAASharpen/IAAEmboss are checked against imgaug 0.4.0's iaa.Sharpen /
iaa.Emboss themselves (what albumentations 0.x wrapped), run through
parallel_keras.compat.imgaug; GaussNoise against albumentations 1.3.1's
formula (augmentations/functional.py: `gauss_noise` under `@clipped`:
clip(float32(img) + gauss, 0, max) cast back to the dtype; transforms.py:
variance uniform in var_limit, sigma = sqrt(variance)).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("albumentations")

from parallel_keras.compat import albumentations as compat_albumentations  # noqa: E402

_IMAGE = np.random.default_rng(0).integers(0, 256, (24, 31, 3), dtype=np.uint8)
_DRAWS = [(0.2, 1.0), (0.37, 0.6), (1.0, 0.0)]


@pytest.mark.usefixtures("imgaug_warnings_stay_in_the_worker")
@pytest.mark.skipif(importlib.util.find_spec("imgaug") is None, reason="imgaug 0.4.0 needed")
@pytest.mark.parametrize("alpha, amount", _DRAWS)
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_iaa_sharpen_and_emboss_give_imgaugs_pixels(alpha, amount, dtype):
    from parallel_keras.compat.imgaug import augmenters as iaa

    image = _IMAGE.astype(dtype) / (255.0 if dtype == "float32" else 1)
    image = image.astype(dtype)
    for ours, theirs in (
        (
            compat_albumentations.IAASharpen(alpha=alpha, lightness=amount, p=1.0),
            iaa.Sharpen(alpha=alpha, lightness=amount),
        ),
        (
            compat_albumentations.IAAEmboss(alpha=alpha, strength=amount, p=1.0),
            iaa.Emboss(alpha=alpha, strength=amount),
        ),
    ):
        got = ours(image=image)["image"]
        expected = theirs.augment_image(image.copy())
        assert got.dtype == image.dtype
        np.testing.assert_array_equal(got, expected)


def test_iaa_transforms_draw_in_their_ranges_and_take_always_apply():
    sharpen = compat_albumentations.IAASharpen(alpha=(0.2, 0.4), lightness=(1.0, 1.0))
    sharpen.set_random_seed(0)
    for _ in range(20):
        matrix = sharpen.get_params()["matrix"]
        alpha = -matrix[0, 0]
        assert 0.2 <= alpha <= 0.4
        np.testing.assert_allclose(matrix[1, 1], (1 - alpha) + alpha * 9.0, rtol=1e-6)
    emboss = compat_albumentations.IAAEmboss(
        alpha=(0.2, 0.4), strength=(0.2, 0.5), always_apply=True
    )
    assert emboss.p == 1.0
    with pytest.raises(ValueError, match="alpha"):
        compat_albumentations.IAASharpen(alpha=(0.5, 0.2))


def test_gauss_noise_adds_and_clips_as_albumentations_1x():
    noise = compat_albumentations.GaussNoise(var_limit=(5.0, 15.0), p=0.3)
    gauss = np.random.default_rng(1).normal(0, 40, _IMAGE.shape)
    expected = np.clip(_IMAGE.astype("float32") + gauss, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(noise.apply(_IMAGE, gauss=gauss), expected)
    floats = _IMAGE.astype("float32") / 255
    np.testing.assert_array_equal(
        noise.apply(floats, gauss=gauss / 255),
        np.clip(floats + gauss / 255, 0, 1.0).astype("float32"),
    )


def test_gauss_noise_var_limit_is_a_variance_in_pixel_units():
    image = np.full((200, 200, 3), 128, dtype=np.uint8)
    noise = compat_albumentations.GaussNoise(var_limit=(9.0, 9.0), p=1.0)
    noise.set_random_seed(0)
    gauss = noise.get_params_dependent_on_data({}, {"image": image})["gauss"]
    assert gauss.shape == image.shape
    np.testing.assert_allclose(gauss.std(), 3.0, rtol=0.02)  # albumentations 2 ignores it: ~80
    shared = compat_albumentations.GaussNoise(var_limit=4.0, per_channel=False, p=1.0)
    shared.set_random_seed(0)
    out = shared(image=image)["image"]
    np.testing.assert_array_equal(out[..., 0], out[..., 2])  # one value per pixel
    assert 0 < np.abs(out.astype(int) - 128).max() <= 12  # var in (0, 4]: sigma <= 2
