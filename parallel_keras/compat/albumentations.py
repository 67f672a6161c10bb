# SPDX-License-Identifier: Apache-2.0
"""albumentations 0.x-1.3 transforms that albumentations 2 removed or changed.

Keras 2-era segmentation projects augment with albumentations of their time
(nuclick: `IAASharpen`, `IAAEmboss`, `GaussNoise(var_limit=...)`). Under
albumentations 2 (needed by NumPy 2):

- `IAASharpen` and `IAAEmboss` are gone (removed in 1.0-1.4). They wrapped
  imgaug 0.4's `iaa.Sharpen` / `iaa.Emboss`: draw `alpha` (and `lightness` /
  `strength`) uniformly from their ranges, build a 3x3 matrix blending the
  identity with the effect, and convolve each channel with `cv2.filter2D`
  (same dtype, reflected border). The classes here do exactly that, drawing
  from albumentations' own seeded random generator.
- `GaussNoise(var_limit=(a, b))` is ignored with a warning (albumentations 2
  takes `std_range` as fractions of the dtype's maximum, by default 51-112
  grey levels). 1.x drew the variance uniformly from `[a, b]` in pixel units,
  used `sigma = sqrt(variance)`, added `N(mean, sigma)` noise (per channel by
  default) to the image as float32 and clipped to `[0, max]` before casting
  back to the image's dtype (truncation). `GaussNoise` here does that.

Modernise: `A.Sharpen(alpha=..., lightness=..., method="kernel")`,
`A.Emboss(alpha=..., strength=...)` and `A.GaussNoise(std_range=(sqrt(a) /
255, sqrt(b) / 255))` (std drawn uniformly instead of the variance).
Requires `pip install albumentations`.
"""

from __future__ import annotations

from typing import Any

import albumentations
import cv2
import numpy as np


def _range(value: Any, name: str, low: float = 0.0) -> tuple[float, float]:
    """`value` as albumentations 1.x took it: a number `v` is `(v, v)`."""
    if isinstance(value, (int, float)):
        value = (value, value)
    low_value, high_value = (float(v) for v in value)
    if low_value < low or high_value < low_value:
        raise ValueError(
            f"{name} must be a number or a (low, high) range with {low} <= low <= high, as "
            f"albumentations 1.x required. Received: {name}={value!r}."
        )
    return low_value, high_value


def _convolve(img: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """imgaug 0.4's `Convolve`: every channel through `cv2.filter2D`, same dtype."""
    channels = img if img.ndim == 3 else img[..., np.newaxis]
    out = np.empty_like(channels)
    for channel in range(channels.shape[-1]):
        out[..., channel] = cv2.filter2D(
            np.ascontiguousarray(channels[..., channel]), -1, matrix.astype(np.float32)
        )
    return out if img.ndim == 3 else out[..., 0]


# albumentations 1.x's MAX_VALUES_BY_DTYPE (others: 1.0).
_MAX_VALUES = {"uint8": 255, "uint16": 65535, "uint32": 4294967295}
_NO_CHANGE = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)


class _Keras2EraTransform(albumentations.ImageOnlyTransform):
    """Takes 1.x's `always_apply` (True meant `p=1`)."""

    def __init__(self, always_apply: bool = False, p: float = 0.5):
        super().__init__(p=1.0 if always_apply else p)


class IAASharpen(_Keras2EraTransform):
    """albumentations 0.x's `IAASharpen` (imgaug's `iaa.Sharpen`), without imgaug.

    Each call draws `alpha` and `lightness` uniformly from their ranges and
    convolves every channel with `(1 - alpha) * identity + alpha * [[-1, -1,
    -1], [-1, 8 + lightness, -1], [-1, -1, -1]]`. Modernise:
    `A.Sharpen(alpha=alpha, lightness=lightness, method="kernel")`.

    Args:
        alpha: Blend of the sharpened image, a number or `(low, high)` in
            `[0, 1]`. Defaults to `(0.2, 0.5)`.
        lightness: Brightness of the sharpened image, a number or
            `(low, high)`. Defaults to `(0.5, 1.0)`.
        always_apply: 1.x's `p=1`. Defaults to False.
        p: Probability of applying the transform. Defaults to 0.5.
    """

    def __init__(
        self,
        alpha: Any = (0.2, 0.5),
        lightness: Any = (0.5, 1.0),
        always_apply: bool = False,
        p: float = 0.5,
    ):
        super().__init__(always_apply=always_apply, p=p)
        self.alpha = _range(alpha, "alpha")
        self.lightness = _range(lightness, "lightness")

    @staticmethod
    def matrix(alpha: float, lightness: float) -> np.ndarray:
        """imgaug's sharpening matrix for one draw."""
        effect = np.array([[-1, -1, -1], [-1, 8 + lightness, -1], [-1, -1, -1]], dtype=np.float32)
        return (1 - alpha) * _NO_CHANGE + alpha * effect

    def get_params(self) -> dict[str, Any]:
        alpha = self.py_random.uniform(*self.alpha)
        lightness = self.py_random.uniform(*self.lightness)
        return {"matrix": self.matrix(alpha, lightness)}

    def apply(self, img: np.ndarray, matrix: np.ndarray, **params: Any) -> np.ndarray:
        return _convolve(img, matrix)

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("alpha", "lightness")


class IAAEmboss(_Keras2EraTransform):
    """albumentations 0.x's `IAAEmboss` (imgaug's `iaa.Emboss`), without imgaug.

    Each call draws `alpha` and `strength` uniformly from their ranges and
    convolves every channel with `(1 - alpha) * identity + alpha * [[-1 - s,
    -s, 0], [-s, 1, s], [0, s, 1 + s]]`. Modernise: `A.Emboss(alpha=alpha,
    strength=strength)`.

    Args:
        alpha: Blend of the embossed image, a number or `(low, high)`.
            Defaults to `(0.2, 0.5)`.
        strength: Strength of the embossing, a number or `(low, high)`.
            Defaults to `(0.2, 0.7)`.
        always_apply: 1.x's `p=1`. Defaults to False.
        p: Probability of applying the transform. Defaults to 0.5.
    """

    def __init__(
        self,
        alpha: Any = (0.2, 0.5),
        strength: Any = (0.2, 0.7),
        always_apply: bool = False,
        p: float = 0.5,
    ):
        super().__init__(always_apply=always_apply, p=p)
        self.alpha = _range(alpha, "alpha")
        self.strength = _range(strength, "strength")

    @staticmethod
    def matrix(alpha: float, strength: float) -> np.ndarray:
        """imgaug's embossing matrix for one draw."""
        s = strength
        effect = np.array(
            [[-1 - s, 0 - s, 0], [0 - s, 1, 0 + s], [0, 0 + s, 1 + s]], dtype=np.float32
        )
        return (1 - alpha) * _NO_CHANGE + alpha * effect

    def get_params(self) -> dict[str, Any]:
        alpha = self.py_random.uniform(*self.alpha)
        strength = self.py_random.uniform(*self.strength)
        return {"matrix": self.matrix(alpha, strength)}

    def apply(self, img: np.ndarray, matrix: np.ndarray, **params: Any) -> np.ndarray:
        return _convolve(img, matrix)

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("alpha", "strength")


class GaussNoise(_Keras2EraTransform):
    """albumentations 1.x's `GaussNoise(var_limit=...)`: variance in pixel units.

    Each call draws the variance uniformly from `var_limit`, and adds
    `N(mean, sqrt(variance))` noise (per channel, or one value per pixel for
    all channels) to the image as float32, clipped to `[0, max]` (255 for
    uint8, 1 for float) and cast back to the image's dtype. Modernise:
    `A.GaussNoise(std_range=(sqrt(low) / 255, sqrt(high) / 255))` for uint8
    images (std drawn uniformly instead of the variance).

    Args:
        var_limit: Range of the variance, or `v` for `(0, v)`. Defaults to
            `(10.0, 50.0)`.
        mean: Mean of the noise. Defaults to 0.
        per_channel: Independent noise per channel. Defaults to True.
        always_apply: 1.x's `p=1`. Defaults to False.
        p: Probability of applying the transform. Defaults to 0.5.
    """

    def __init__(
        self,
        var_limit: Any = (10.0, 50.0),
        mean: float = 0,
        per_channel: bool = True,
        always_apply: bool = False,
        p: float = 0.5,
    ):
        super().__init__(always_apply=always_apply, p=p)
        if isinstance(var_limit, (int, float)):
            var_limit = (0, var_limit)  # 1.x: a number v is (0, v).
        self.var_limit = _range(var_limit, "var_limit")
        self.mean = mean
        self.per_channel = per_channel

    def get_params_dependent_on_data(
        self, params: dict[str, Any], data: dict[str, Any]
    ) -> dict[str, Any]:
        image = data["image"] if "image" in data else data["images"][0]
        shape = image.shape
        sigma = self.py_random.uniform(*self.var_limit) ** 0.5
        if self.per_channel or len(shape) < 3:
            gauss = self.random_generator.normal(self.mean, sigma, shape)
        else:
            gauss = self.random_generator.normal(self.mean, sigma, shape[:2])[..., np.newaxis]
        return {"gauss": gauss}

    def apply(self, img: np.ndarray, gauss: np.ndarray, **params: Any) -> np.ndarray:
        maximum = _MAX_VALUES.get(img.dtype.name, 1.0)
        return np.clip(img.astype(np.float32) + gauss, 0, maximum).astype(img.dtype)

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("var_limit", "mean", "per_channel")
