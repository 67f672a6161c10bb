# SPDX-License-Identifier: Apache-2.0
"""imgaug 0.4.0 augmenters with fixed seeds: the arrays NumPy 1 and NumPy 2 must share.

Imported twice: by `make_reference.py` in a NumPy 1 environment (plain
`import imgaug`), and by tests/compat/test_imgaug.py under NumPy 2 through
`parallel_keras.compat.imgaug`. `run(iaa, ia)` returns {case name: array}.
The cases are the augmenters Keras 2-era projects of the corpus use
(chexnet's `Sequential([Fliplr(0.5)], random_order=True)`, dsb2018_selim's
`to_deterministic()` + `augment_image` of Emboss, Sharpen,
AdditiveGaussianNoise, PiecewiseAffine, PerspectiveTransform, Superpixels)
and the other common ones, on uint8 and float32 images and a mask.
"""

from __future__ import annotations

import numpy as np


def _images():
    rows = np.arange(24)[:, None, None]
    cols = np.arange(32)[None, :, None]
    chans = np.arange(3)[None, None, :]
    rgb = ((rows * 11 + cols * 7 + chans * 60) % 256).astype(np.uint8)
    batch = np.stack([np.roll(rgb, k * 5, axis=1) for k in range(4)])
    mask = ((rows[..., 0] // 6 + cols[..., 0] // 8) % 3).astype(np.uint8)
    return rgb, batch, mask


def _factories(iaa):
    return {
        "chexnet_sequential_fliplr": lambda: iaa.Sequential([iaa.Fliplr(0.5)], random_order=True),
        "noop": lambda: iaa.Noop(),
        "emboss": lambda: iaa.Emboss((0.2, 0.5), (0.2, 0.7)),
        "sharpen": lambda: iaa.Sharpen((0.2, 0.5), (0.5, 1.0)),
        "additive_gaussian_noise": lambda: iaa.AdditiveGaussianNoise(0, (0.01 * 255, 0.05 * 255)),
        "additive_gaussian_noise_per_channel": lambda: iaa.AdditiveGaussianNoise(
            scale=0.05 * 255, per_channel=0.5
        ),
        "piecewise_affine": lambda: iaa.PiecewiseAffine((0.03, 0.05), 4, 4),
        "perspective_transform": lambda: iaa.PerspectiveTransform((0.05, 0.1)),
        "superpixels": lambda: iaa.Superpixels(p_replace=0.1, n_segments=20),
        "flipud": lambda: iaa.Flipud(0.5),
        "affine": lambda: iaa.Affine(
            scale=(0.8, 1.2), translate_percent=(-0.1, 0.1), rotate=(-20, 20), shear=(-8, 8)
        ),
        "crop": lambda: iaa.Crop(percent=(0, 0.1)),
        "pad": lambda: iaa.Pad(px=(0, 4), pad_mode="reflect"),
        "gaussian_blur": lambda: iaa.GaussianBlur(sigma=(0.0, 1.5)),
        "average_blur": lambda: iaa.AverageBlur(k=(2, 4)),
        "median_blur": lambda: iaa.MedianBlur(k=3),
        "multiply": lambda: iaa.Multiply((0.8, 1.2), per_channel=0.2),
        "add": lambda: iaa.Add((-20, 20), per_channel=0.5),
        "linear_contrast": lambda: iaa.LinearContrast((0.75, 1.5)),
        "contrast_normalization": lambda: iaa.ContrastNormalization((0.5, 1.5)),
        "gamma_contrast": lambda: iaa.GammaContrast((0.5, 2.0)),
        "dropout": lambda: iaa.Dropout((0.01, 0.1), per_channel=0.5),
        "coarse_dropout": lambda: iaa.CoarseDropout((0.03, 0.15), size_percent=(0.1, 0.3)),
        "grayscale": lambda: iaa.Grayscale(alpha=(0.0, 1.0)),
        "invert": lambda: iaa.Invert(0.5),
        "add_hue_saturation": lambda: iaa.AddToHueAndSaturation((-20, 20)),
        "elastic": lambda: iaa.ElasticTransformation(alpha=(0, 5.0), sigma=0.25),
        "rot90": lambda: iaa.Rot90((0, 3)),
        "resize": lambda: iaa.Resize({"height": 16, "width": 20}),
        "frequency_noise_alpha": lambda: iaa.FrequencyNoiseAlpha(
            first=iaa.Multiply(1.5), second=iaa.Add(-10)
        ),
        "simplex_noise_alpha": lambda: iaa.SimplexNoiseAlpha(first=iaa.Multiply(1.5)),
        "some_of": lambda: iaa.SomeOf(
            (1, 3),
            [iaa.Fliplr(1.0), iaa.Add(10), iaa.Multiply(0.9), iaa.GaussianBlur(1.0)],
            random_order=True,
        ),
        "one_of_sometimes": lambda: iaa.Sequential(
            [
                iaa.Sometimes(0.5, iaa.GaussianBlur(sigma=(0, 0.5))),
                iaa.OneOf([iaa.Dropout(0.05), iaa.Add(-15), iaa.Fliplr(1.0)]),
            ],
            random_order=True,
        ),
        "clahe": lambda: iaa.CLAHE(clip_limit=(1, 4)),
        "salt_and_pepper": lambda: iaa.SaltAndPepper(0.05),
    }


def run(iaa, ia) -> dict[str, np.ndarray]:
    """Every case's output arrays, each augmenter seeded by `ia.seed` then its own seed."""
    rgb, batch, mask = _images()
    out: dict[str, np.ndarray] = {}
    for index, (name, factory) in enumerate(sorted(_factories(iaa).items())):
        ia.seed(1000 + index)
        aug = factory()
        out[f"{name}/batch"] = np.asarray(aug.augment_images(batch))
        # dsb2018_selim's idiom: the same deterministic augmenter on image and mask.
        det = aug.to_deterministic()
        out[f"{name}/image"] = det.augment_image(rgb)
        if name not in {
            "emboss",
            "sharpen",
            "additive_gaussian_noise",
            "additive_gaussian_noise_per_channel",
            "superpixels",
            "add_hue_saturation",
            "grayscale",
            "clahe",
            "frequency_noise_alpha",
            "simplex_noise_alpha",
            "some_of",
            "one_of_sometimes",
            "multiply",
            "add",
            "linear_contrast",
            "contrast_normalization",
            "gamma_contrast",
            "invert",
            "dropout",
            "coarse_dropout",
            "salt_and_pepper",
            "median_blur",
            "average_blur",
            "gaussian_blur",
        }:
            out[f"{name}/mask"] = det.augment_image(mask[..., None])
        if name in {
            "affine",
            "gaussian_blur",
            "multiply",
            "add_hue_saturation",
            "emboss",
            "additive_gaussian_noise",
            "linear_contrast",
        }:
            ia.seed(2000 + index)
            floats = (batch.astype(np.float32) / 255.0) if name != "add_hue_saturation" else batch
            out[f"{name}/float32"] = np.asarray(factory().augment_images(floats))
    return out
