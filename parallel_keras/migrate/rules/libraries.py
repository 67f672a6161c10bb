# SPDX-License-Identifier: Apache-2.0
"""Rewrite: the libraries beside Keras, where Keras 2-era scripts hit removals.

* pandas 1.0 removed `DataFrame.as_matrix()` (-> `.to_numpy()`) and `.ix`
  (-> `.loc` where every key is a label: a string, a list of strings, a
  slice of strings or `:`; otherwise `.ix` chose labels or positions by the
  index's type, and the line is flagged); pandas 2.0 removed
  `DataFrame.append` (-> `pd.concat([df, other])`, where `other` is a
  DataFrame the script builds, or a dict / list of dicts as new rows).
* SciPy 1.3 removed `scipy.misc.imread`/`imresize`/`imsave` (and
  `toimage`, `fromimage`, `bytescale`, `scipy.ndimage.imread`): they go to
  `parallel_keras.compat.scipy_misc`, the same functions on Pillow (pixel for
  pixel: `imresize` byte-scales non-uint8 arrays and returns uint8, which a
  bare Pillow resize does not), a compatibility path.
* Python 3.11 removed `inspect.getargspec` (Keras 2-era decorators read its
  `.keywords`): -> `parallel_keras.compat.getargspec`, Python 3.10's function.
* scikit-learn 0.20 removed `sklearn.cross_validation` (the functions with
  the same signature go to `sklearn.model_selection`; the splitter classes,
  whose constructors changed, are flagged) and 0.23 `sklearn.externals.joblib`
  (-> `joblib`, a scikit-learn dependency).
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

RULE = "libraries"

_SCIPY_IMAGE = frozenset({"imread", "imresize", "imsave", "toimage", "fromimage", "bytescale"})
_SCIPY_MODULES = {"scipy.misc": _SCIPY_IMAGE, "scipy.ndimage": frozenset({"imread"})}
_GETARGSPEC = "parallel_keras.compat.getargspec"
_GETARGSPEC_WHY = "removed in Python 3.11; Python 3.10's function (the same ArgSpec, .keywords)"
_GETARGSPEC_MODERN = "inspect.getfullargspec(f) (.varkw for .keywords) or inspect.signature(f)"
_SKIMAGE_IO = "parallel_keras.compat.skimage_io"
_SKIMAGE_WHY = (
    "scikit-image 0.20+ no longer converts the array (Pillow refuses a float colour "
    "image); scikit-image 0.14's conversion (img_as_ubyte), pixel for pixel"
)
_SKIMAGE_MODERN = "skimage.io.imsave(path, skimage.util.img_as_ubyte(image))"
_SKELETON = "parallel_keras.compat.skimage_morphology"
_SKELETON_WHY = (
    "removed in scikit-image 0.25; scikit-image 0.22's values (uint8, the image's maximum "
    "on the skeleton: 255 for a mask), where skeletonize(method='lee') gives booleans"
)
_SKELETON_MODERN = "skimage.morphology.skeletonize(image, method='lee') * 255"
_SCIPY_MODERN = {
    "imread": "numpy.asarray(PIL.Image.open(path)) (convert('RGB') for palette images)",
    "imresize": "numpy.asarray(PIL.Image.fromarray(x).resize((width, height), "
    "PIL.Image.BILINEAR)) on uint8 arrays (byte-scale float arrays to 0-255 first)",
    "imsave": "PIL.Image.fromarray(x).save(path) on uint8 arrays",
    "toimage": "PIL.Image.fromarray(x) on uint8 arrays",
    "fromimage": "numpy.asarray(image)",
    "bytescale": "((x - x.min()) * 255 / (x.max() - x.min()) + 0.5).astype('uint8')",
}
# sklearn.cross_validation names with the same signature in model_selection.
_SAME_IN_MODEL_SELECTION = frozenset(
    {
        "train_test_split",
        "cross_val_score",
        "cross_val_predict",
        "permutation_test_score",
        "check_cv",
    }
)
_CROSS_VALIDATION_FIX = (
    "sklearn.cross_validation was removed in scikit-learn 0.20; its splitters moved to "
    "sklearn.model_selection with new constructors: KFold(n, n_folds) -> "
    "KFold(n_splits=n_folds) and `for train, test in kfold.split(X)`; "
    "StratifiedKFold(y, n_folds) -> StratifiedKFold(n_splits=n_folds) and "
    "`.split(X, y)`; ShuffleSplit(n, n_iter) -> ShuffleSplit(n_splits=n_iter) and "
    "`.split(X)`."
)
# Window functions SciPy 1.13 removed from `scipy.signal` (they stay in
# `scipy.signal.windows`, the same functions); `hanning` was `hann`'s alias.
_WINDOWS = {
    name: name
    for name in (
        "barthann bartlett blackman blackmanharris bohman boxcar chebwin cosine "
        "exponential flattop gaussian general_gaussian hamming hann kaiser nuttall "
        "parzen triang tukey"
    ).split()
} | {"hanning": "hann"}
_WINDOWS_WHY = "removed from scipy.signal in SciPy 1.13; the same window functions"
# scikit-image 0.19 removed skimage.morphology.watershed, moved (0.17) to
# skimage.segmentation: the same function, the same arguments.
_WATERSHED = {"watershed": "watershed"}
_WATERSHED_WHY = (
    "removed from skimage.morphology in scikit-image 0.19; the same function "
    "in skimage.segmentation"
)
# Names moved out of a module: old module -> (new module, old name -> new name, why).
_MOVED = {
    "scipy.signal": ("scipy.signal.windows", _WINDOWS, _WINDOWS_WHY),
    "skimage.morphology": ("skimage.segmentation", _WATERSHED, _WATERSHED_WHY),
}
# skimage.measure.label(image, neighbors=4|8): scikit-image 0.14 (measure/_ccomp.pyx)
# read neighbors=4 as connectivity=1 and 8 as connectivity=image.ndim; 0.16
# removed `neighbors`.
# skimage.filters.median(image, selem, out, mask, shift_x, shift_y) of scikit-image
# <= 0.14 was skimage.filters.rank.median with the same arguments (0.14,
# filters/_median.py); 0.19 dropped those arguments (the default became
# scipy.ndimage's filter). A call passing one of them goes to the rank filter.
_MEDIAN = frozenset({"skimage.filters.median", "skimage.filters._median.median"})
_MEDIAN_ONLY_014 = frozenset({"selem", "mask", "shift_x", "shift_y"})
_MEDIAN_WHY = (
    "scikit-image 0.19 removed median's selem/mask/shift_x/shift_y; 0.14's median was "
    "skimage.filters.rank.median with the same arguments (selem -> footprint)"
)
_LABEL = frozenset({"skimage.measure.label", "skimage.morphology.label"})
_LABEL_FIX = (
    "scikit-image 0.16 removed label's `neighbors`: neighbors=4 is connectivity=1, "
    "neighbors=8 is connectivity=image.ndim (2 for an image, 3 for a volume)."
)
# imgaug 0.4.0 (2020, its last release) reads np.sctypes, which NumPy 2.0
# removed (TF 2.18+ installs NumPy 2), and np.complex / np.bool:
# parallel_keras.compat.imgaug loads it with NumPy 1's values for those names.
_IMGAUG = "parallel_keras.compat.imgaug"
_IMGAUG_WHY = (
    "imgaug 0.4.0 (unmaintained, its last release) reads np.sctypes, which NumPy 2 "
    "removed; the compatibility path loads imgaug's own modules with NumPy 1's values "
    "for the names it reads (NumPy itself unchanged)"
)
_IMGAUG_MODERN = (
    "albumentations>=1.4 (`import albumentations as A`; iaa.Fliplr(0.5) -> "
    "A.HorizontalFlip(p=0.5), iaa.Affine(rotate=...) -> A.Affine(rotate=...), "
    "iaa.Sequential -> A.Compose) or Keras 3 preprocessing layers "
    "(keras.layers.RandomFlip, RandomRotation, RandomZoom)"
)
_KERAS_RESNET_WHY = (
    "keras-resnet 0.2.0 (a Keras 2 add-on, its last release) declares its "
    "BatchNormalization's call(*args, **kwargs), so Keras 3 builds it with no input "
    "shape (TypeError); the compatibility path gives that class Keras 2's call "
    "signature, the same architecture and weight names"
)
_KERAS_RESNET_MODERN = (
    "keras.applications.ResNet50(include_top=False, input_tensor=inputs) (the same "
    "architecture with other layer names and conv biases: keras-resnet weight files "
    "do not load into it)"
)
_SKOPT_WHY = (
    "scikit-optimize 0.10.2 (archived, its last release): with scikit-learn >= 1.6 "
    "its GBRT surrogate is refused as 'not a regressor' (bases listed in the wrong "
    "order for scikit-learn's tags) and with NumPy >= 2.4 its predict calls np.in1d; "
    "the compatibility path lists the bases in scikit-learn's order and gives skopt "
    "NumPy 1's names, fit/predict unchanged"
)
_SKOPT_MODERN = "Optuna, or skopt's forest_minimize / gp_minimize"
# Packages beside Keras that run through a whole-package compatibility module:
# import name -> (compat module, why, modern form, pip requirement).
_PACKAGES = {
    "imgaug": (_IMGAUG, _IMGAUG_WHY, _IMGAUG_MODERN, "imgaug"),
    "keras_resnet": (
        "parallel_keras.compat.keras_resnet",
        _KERAS_RESNET_WHY,
        _KERAS_RESNET_MODERN,
        "keras-resnet",
    ),
    "skopt": ("parallel_keras.compat.skopt", _SKOPT_WHY, _SKOPT_MODERN, "scikit-optimize"),
}
_IMGAUG_STAR_FIX = (
    "import the names you use: `from parallel_keras.compat.imgaug import augmenters as "
    "iaa` (imgaug 0.4.0 under NumPy 2), or write the augmentation with " + _IMGAUG_MODERN + "."
)
# albumentations 1.4 removed RandomBrightness/RandomContrast, which were (1.3.1,
# augmentations/transforms.py) RandomBrightnessContrast with the other limit 0
# (brightness_by_max=True, the default then and in 2.x); 2.0 removed
# always_apply (True meant p=1) and GaussNoise's var_limit.
_ALBUMENTATIONS = ("albumentations", "albumentations.augmentations.transforms")
_BRIGHTNESS_CONTRAST = {"RandomBrightness": "brightness_limit", "RandomContrast": "contrast_limit"}
_ALBUMENTATIONS_IAA = (
    "albumentations' IAA* transforms wrapped imgaug and were removed in albumentations "
    "1.0-1.4; use albumentations' own port (IAAAdditiveGaussianNoise -> A.GaussNoise, "
    "IAAPiecewiseAffine -> A.PiecewiseAffine, IAAPerspective -> A.Perspective, "
    "IAAAffine -> A.Affine, IAASuperpixels -> A.Superpixels), or imgaug's augmenter "
    "through parallel_keras.compat.imgaug in an A.Lambda(image=...)."
)
# The albumentations 0.x-1.3 transforms parallel_keras.compat.albumentations
# computes exactly (IAASharpen/IAAEmboss: imgaug's convolution; GaussNoise:
# 1.x's variance in pixel units), and their modern form.
_ALBUMENTATIONS_COMPAT = "parallel_keras.compat.albumentations"
_ALBUMENTATIONS_IAA_COMPAT = {
    "IAASharpen": (
        "removed in albumentations 1.0 (it wrapped imgaug's iaa.Sharpen)",
        "A.Sharpen(alpha=..., lightness=..., method='kernel')",
    ),
    "IAAEmboss": (
        "removed in albumentations 1.0 (it wrapped imgaug's iaa.Emboss)",
        "A.Emboss(alpha=..., strength=...)",
    ),
}
_IAA_MODULES = ("albumentations.imgaug", "albumentations.imgaug.transforms")
# albumentations 1.x's GaussNoise arguments that 2.x dropped.
_GAUSS_NOISE_1X = frozenset({"var_limit", "mean", "always_apply"})
_GAUSS_NOISE_WHY = (
    "albumentations 2 ignores var_limit (with a warning) and adds noise of std 0.2-0.44 of "
    "the dtype's maximum (51-112 grey levels); 1.x drew the variance from var_limit in "
    "pixel units"
)
_GAUSS_NOISE_MODERN = (
    "A.GaussNoise(std_range=(sqrt(low) / 255, sqrt(high) / 255)) (std drawn uniformly "
    "instead of the variance)"
)
_APPEND_KEYWORDS = frozenset({"ignore_index", "verify_integrity", "sort"})
_PANDAS_DATAFRAME_SOURCES = ("pandas.DataFrame", "pandas.read_", "pandas.concat", "pandas.merge")

# name, what it becomes (None: flagged), why[, modern form]. Read by the audit table.
AUDIT: list[tuple[str, str | None, str] | tuple[str, str | None, str, str | None]] = [
    ("DataFrame.as_matrix()", "DataFrame.to_numpy()", "removed in pandas 1.0; same array"),
    (
        "DataFrame.as_matrix(columns)",
        "DataFrame[columns].to_numpy()",
        "removed in pandas 1.0; same array",
    ),
    (
        "df.ix[labels]",
        "df.loc[labels]",
        "removed in pandas 1.0; every key a string, list of strings or `:` is a label",
    ),
    (
        "df.ix[other keys]",
        None,
        "removed in pandas 1.0; .ix read integers as labels or positions by the index's "
        "type: use .loc for labels, .iloc for positions",
    ),
    (
        "df.append(other_df / {row} / [rows])",
        "pd.concat([df, other_df / pd.DataFrame([row]) / pd.DataFrame(rows)])",
        "removed in pandas 2.0; the same frame",
    ),
    (
        "df.append(x) of a value not known to be a DataFrame or rows",
        None,
        "removed in pandas 2.0: pd.concat([df, x]) for a DataFrame, "
        "pd.concat([df, x.to_frame().T]) for a Series row",
    ),
    *(
        (
            f"scipy.misc.{name}",
            f"parallel_keras.compat.scipy_misc.{name}",
            "removed in SciPy 1.3; SciPy 1.2's function on Pillow, pixel for pixel",
            _SCIPY_MODERN[name],
        )
        for name in sorted(_SCIPY_IMAGE)
    ),
    ("skimage.io.imsave", f"{_SKIMAGE_IO}.imsave", _SKIMAGE_WHY, _SKIMAGE_MODERN),
    (
        "skimage.morphology.skeletonize_3d",
        f"{_SKELETON}.skeletonize_3d",
        _SKELETON_WHY,
        _SKELETON_MODERN,
    ),
    ("inspect.getargspec", _GETARGSPEC, _GETARGSPEC_WHY, _GETARGSPEC_MODERN),
    (
        "scipy.ndimage.imread",
        "parallel_keras.compat.scipy_misc.imread",
        "removed in SciPy 1.2; the same function on Pillow",
        _SCIPY_MODERN["imread"],
    ),
    *(
        (
            f"sklearn.cross_validation.{name}",
            f"sklearn.model_selection.{name}",
            "removed in scikit-learn 0.20; the same function",
        )
        for name in sorted(_SAME_IN_MODEL_SELECTION)
    ),
    ("sklearn.cross_validation.KFold (and the other splitters)", None, _CROSS_VALIDATION_FIX),
    ("sklearn.externals.joblib", "joblib", "removed in scikit-learn 0.23; the same package"),
    ("imgaug (any import)", _IMGAUG, _IMGAUG_WHY, _IMGAUG_MODERN),
    (
        "keras_resnet (any import)",
        "parallel_keras.compat.keras_resnet",
        _KERAS_RESNET_WHY,
        _KERAS_RESNET_MODERN,
    ),
    ("skopt (any import)", "parallel_keras.compat.skopt", _SKOPT_WHY, _SKOPT_MODERN),
    (
        "albumentations.RandomBrightness(limit, p=...) / RandomContrast(limit, p=...)",
        "albumentations.RandomBrightnessContrast(brightness_limit=limit, contrast_limit=0, "
        "p=...) (and the other way round)",
        "removed in albumentations 1.4; albumentations 1.3.1 defined them so "
        "(brightness_by_max=True, the default in every version)",
    ),
    *(
        (f"albumentations.{name}", f"{_ALBUMENTATIONS_COMPAT}.{name}", why, modern)
        for name, (why, modern) in _ALBUMENTATIONS_IAA_COMPAT.items()
    ),
    ("albumentations.IAA* (the others)", None, _ALBUMENTATIONS_IAA),
    (
        "albumentations.GaussNoise(var_limit=..., mean=..., always_apply=...)",
        f"{_ALBUMENTATIONS_COMPAT}.GaussNoise(...)",
        _GAUSS_NOISE_WHY,
        _GAUSS_NOISE_MODERN,
    ),
    ("from imgaug import *", None, "a star import of imgaug's package: " + _IMGAUG_STAR_FIX),
    *(
        (
            f"scipy.signal.{old}",
            f"scipy.signal.windows.{new}",
            "removed from scipy.signal in SciPy 1.13; the same window function",
        )
        for old, new in sorted(_WINDOWS.items())
    ),
    ("skimage.morphology.watershed", "skimage.segmentation.watershed", _WATERSHED_WHY),
    (
        "skimage.filters.median(image, selem, out, mask=..., shift_x=...)",
        "skimage.filters.rank.median(image, footprint, out, mask=..., shift_x=...)",
        _MEDIAN_WHY,
    ),
    (
        "skimage.measure.label(image, neighbors=4 / 8)",
        "skimage.measure.label(image, connectivity=1 / image.ndim)",
        "removed in scikit-image 0.16; scikit-image 0.14 read neighbors so",
    ),
    (
        "skimage.measure.label(<expression>, neighbors=8) / neighbors=<variable>",
        None,
        _LABEL_FIX,
    ),
]


def _package(module: str) -> str | None:
    """The package of `_PACKAGES` that `module` is or is in."""
    top = module.split(".")[0]
    return top if top in _PACKAGES else None


def _is_label(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(_is_label(e.value) for e in node.elements)
    return False


def _ix_keys_are_labels(subscript: cst.Subscript) -> bool:
    for element in subscript.slice:
        key = element.slice
        if isinstance(key, cst.Index):
            if not _is_label(key.value):
                return False
        elif isinstance(key, cst.Slice):
            parts = [key.lower, key.upper]
            if key.step is not None or any(p is not None and not _is_label(p) for p in parts):
                return False
        else:
            return False
    return True


class LibrariesRule(context.Rule):
    """pandas, SciPy and scikit-learn removals, to their same-meaning calls."""

    name = RULE

    def __init__(self):
        self._pandas: str | None = None  # The script's name for pandas.
        self._frames: set[str] = set()  # Names assigned a DataFrame somewhere.

    # -- Scan -----------------------------------------------------------------

    def visit_Import(self, ctx, node):
        for alias in node.names:
            if syntax.dotted(alias.name) == "pandas" and self._pandas is None:
                self._pandas = alias.evaluated_alias or "pandas"

    def visit_Assign(self, ctx, node):
        if isinstance(node.value, cst.Call) and self._makes_frame(ctx, node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._frames.add(target.target.value)

    def _makes_frame(self, ctx, call: cst.Call) -> bool:
        qualified = ctx.qualified_name(call.func) or ""
        return qualified.startswith(_PANDAS_DATAFRAME_SOURCES)

    # -- Rewrite: imports --------------------------------------------------------

    def _package_from(self, ctx, original, updated, package: str):
        """`from imgaug[.sub] import names` -> `from parallel_keras.compat.imgaug[.sub] import names`."""
        compat, why, modern, requirement = _PACKAGES[package]
        module = syntax.dotted(updated.module)
        if isinstance(updated.names, cst.ImportStar) and module == package:
            ctx.flag(
                original,
                RULE,
                f"`from {package} import *`: a star import of a package run through `{compat}`",
                _IMGAUG_STAR_FIX
                if package == "imgaug"
                else f"import the names you use: `from {compat} import models`; "
                f"modern form: {modern}.",
            )
            return updated
        target = compat + module[len(package) :]
        ctx.require_package(requirement)
        ctx.compat(
            original,
            RULE,
            f"`from {module} import ...` -> `from {target} import ...`: {why}",
            modern,
        )
        return updated.with_changes(module=syntax.dotted_expression(target))

    def leave_ImportFrom(self, ctx, original, updated):
        if updated.module is not None and not updated.relative:
            package = _package(syntax.dotted(updated.module))
            if package is not None:
                return self._package_from(ctx, original, updated, package)
        if updated.module is None or updated.relative or isinstance(updated.names, cst.ImportStar):
            return updated
        module = syntax.dotted(updated.module)
        if module in _ALBUMENTATIONS or module in _IAA_MODULES:
            return self._albumentations_import(ctx, original, updated)
        names = [syntax.dotted(alias.name) for alias in updated.names]
        if module in _SCIPY_MODULES and all(n in _SCIPY_MODULES[module] for n in names):
            ctx.require_package("pillow")
            ctx.compat(
                original,
                RULE,
                f"`from {module} import {', '.join(names)}` -> `from parallel_keras.compat.scipy_misc "
                "import ...`: removed in SciPy 1.3; SciPy 1.2's functions on Pillow, pixel "
                "for pixel",
                "; ".join(f"{n}: {_SCIPY_MODERN[n]}" for n in names),
            )
            return updated.with_changes(
                module=syntax.dotted_expression("parallel_keras.compat.scipy_misc")
            )
        if module == "skimage.io" and "imsave" in names:
            ctx.compat(
                original,
                RULE,
                f"`from skimage.io import {', '.join(names)}` -> `from {_SKIMAGE_IO} import ...`: "
                + _SKIMAGE_WHY,
                _SKIMAGE_MODERN,
            )
            return updated.with_changes(module=syntax.dotted_expression(_SKIMAGE_IO))
        if module == "skimage.morphology" and "skeletonize_3d" in names:
            ctx.compat(
                original,
                RULE,
                f"`from skimage.morphology import {', '.join(names)}` -> `from {_SKELETON} "
                "import ...`: skeletonize_3d " + _SKELETON_WHY,
                _SKELETON_MODERN,
            )
            return updated.with_changes(module=syntax.dotted_expression(_SKELETON))
        if module == "sklearn.cross_validation":
            changed = [n for n in names if n not in _SAME_IN_MODEL_SELECTION]
            if changed:
                ctx.flag(
                    original,
                    RULE,
                    f"`{', '.join(changed)}` from sklearn.cross_validation",
                    _CROSS_VALIDATION_FIX,
                )
                return updated
            ctx.change(
                original,
                RULE,
                "`sklearn.cross_validation` -> `sklearn.model_selection`: removed in "
                "scikit-learn 0.20; the same functions",
            )
            return updated.with_changes(module=syntax.dotted_expression("sklearn.model_selection"))
        if module == "sklearn.externals.joblib":
            ctx.change(
                original,
                RULE,
                "`sklearn.externals.joblib` -> `joblib`: removed in scikit-learn 0.23",
            )
            return updated.with_changes(module=cst.Name("joblib"))
        return updated

    def _albumentations_import(self, ctx, original, updated):
        names = [syntax.dotted(alias.name) for alias in updated.names]
        iaa = [n for n in names if n.startswith("IAA") and n not in _ALBUMENTATIONS_IAA_COMPAT]
        if iaa:
            ctx.flag(original, RULE, f"`{', '.join(iaa)}` from albumentations", _ALBUMENTATIONS_IAA)
        ported = [n for n in names if n in _ALBUMENTATIONS_IAA_COMPAT]
        if ported and len(ported) < len(names):
            # albumentations 2 has no such name: the import itself would fail.
            # Calls become parallel_keras.compat.albumentations's.
            aliases = [a for a in updated.names if syntax.dotted(a.name) not in ported]
            aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            updated = updated.with_changes(names=aliases)
            names = [n for n in names if n not in ported]
            ctx.change(
                original,
                RULE,
                f"removed `{', '.join(ported)}` from the albumentations import: removed in "
                f"albumentations 1.0; its calls go to {_ALBUMENTATIONS_COMPAT}",
            )
        if not any(n in _BRIGHTNESS_CONTRAST for n in names):
            return updated
        kept: list[cst.ImportAlias] = []
        seen: set[tuple[str, str | None]] = set()
        for alias in updated.names:
            name = syntax.dotted(alias.name)
            if name in _BRIGHTNESS_CONTRAST:
                alias = alias.with_changes(name=cst.Name("RandomBrightnessContrast"))
                name = "RandomBrightnessContrast"
            asname = alias.evaluated_alias
            if (name, asname) in seen:
                continue
            seen.add((name, asname))
            kept.append(alias)
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ctx.change(
            original,
            RULE,
            "`RandomBrightness`/`RandomContrast` -> `RandomBrightnessContrast`: removed in "
            "albumentations 1.4, where they were RandomBrightnessContrast with the other limit 0",
        )
        return updated.with_changes(names=kept)

    def leave_SimpleStatementLine(self, ctx, original, updated):
        # `from sklearn.externals import joblib` -> `import joblib`.
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        statement = updated.body[0]
        if (
            statement.module is not None
            and not statement.relative
            and syntax.dotted(statement.module) in _MOVED
            and not isinstance(statement.names, cst.ImportStar)
        ):
            return self._moved_names(ctx, original, updated, statement)
        if (
            statement.module is None
            or syntax.dotted(statement.module) != "sklearn.externals"
            or isinstance(statement.names, cst.ImportStar)
            or [syntax.dotted(a.name) for a in statement.names] != ["joblib"]
        ):
            return updated
        ctx.change(
            original,
            RULE,
            "`from sklearn.externals import joblib` -> `import joblib`: "
            "removed in scikit-learn 0.23",
        )
        alias = statement.names[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=[cst.Import(names=[alias])])

    def _moved_names(self, ctx, original, updated, statement):
        """`from scipy.signal import gaussian, convolve` -> windows from `.windows` (and
        the other names of `_MOVED`)."""
        new_module, moves, why = _MOVED[syntax.dotted(statement.module)]
        windows = [a for a in statement.names if syntax.dotted(a.name) in moves]
        if not windows:
            return updated
        kept = [a for a in statement.names if a not in windows]
        moved = []
        for alias in windows:
            old = syntax.dotted(alias.name)
            new = moves[old]
            asname = alias.asname
            if asname is None and new != old:
                asname = cst.AsName(name=cst.Name(old))
            moved.append(
                alias.with_changes(
                    name=cst.Name(new), asname=asname, comma=cst.MaybeSentinel.DEFAULT
                )
            )
        moved = [
            alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            for alias in moved[:-1]
        ] + moved[-1:]
        ctx.change(
            original,
            RULE,
            f"`{', '.join(syntax.dotted(a.name) for a in windows)}` imported from "
            f"`{new_module}`: {why}",
        )
        new_import = cst.ImportFrom(module=syntax.dotted_expression(new_module), names=moved)
        if not kept:
            return updated.with_changes(body=[new_import])
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.FlattenSentinel(
            [
                updated.with_changes(body=[statement.with_changes(names=kept)]),
                cst.SimpleStatementLine(body=[new_import]),
            ]
        )

    def leave_Import(self, ctx, original, updated):
        names: list[cst.ImportAlias] = []
        for alias in updated.names:
            dotted = syntax.dotted(alias.name)
            package = _package(dotted)
            if package is not None:
                names.extend(self._package_import(ctx, original, alias, dotted, package))
                continue
            if dotted == "sklearn.externals.joblib" and alias.asname is not None:
                names.append(alias.with_changes(name=cst.Name("joblib")))
            elif dotted == "sklearn.cross_validation":
                names.append(
                    alias.with_changes(name=syntax.dotted_expression("sklearn.model_selection"))
                )
            else:
                names.append(alias)
                continue
            ctx.change(original, RULE, f"`import {dotted}`: removed; the same module moved")
        if len(names) > len(updated.names):  # keep the commas between the names
            names = [
                alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for alias in names[:-1]
            ] + [names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        return updated.with_changes(names=names)

    def _package_import(
        self, ctx, original, alias, dotted: str, package: str
    ) -> list[cst.ImportAlias]:
        """`import imgaug[.sub] [as x]` -> the same module through parallel_keras.compat.imgaug.

        `import imgaug.sub` (which binds `imgaug`) -> `import parallel_keras.compat.imgaug.sub,
        parallel_keras.compat.imgaug as imgaug`: the submodule loaded, the name bound.
        """
        compat, why, modern, requirement = _PACKAGES[package]
        ctx.require_package(requirement)
        target = compat + dotted[len(package) :]
        ctx.compat(original, RULE, f"`import {dotted}` -> `import {target}`: {why}", modern)
        if alias.asname is not None:
            return [alias.with_changes(name=syntax.dotted_expression(target))]
        bound = cst.ImportAlias(
            name=syntax.dotted_expression(compat),
            asname=cst.AsName(name=cst.Name(package)),
            comma=alias.comma,
        )
        if dotted == package:
            return [bound]
        return [cst.ImportAlias(name=syntax.dotted_expression(target)), bound]

    # -- Rewrite: uses -------------------------------------------------------------

    def leave_Attribute(self, ctx, original, updated):
        qualified = ctx.qualified_name(original) or ""
        module, _, name = qualified.rpartition(".")
        if module in _SCIPY_MODULES and name in _SCIPY_MODULES[module]:
            ctx.require_import("parallel_keras.compat.scipy_misc")
            ctx.require_package("pillow")
            ctx.compat(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `parallel_keras.compat.scipy_misc.{name}`: removed in "
                "SciPy 1.3; SciPy 1.2's function on Pillow, pixel for pixel",
                _SCIPY_MODERN[name],
            )
            return syntax.expression(f"parallel_keras.compat.scipy_misc.{name}")
        if qualified == "inspect.getargspec":
            ctx.require_import("parallel_keras")
            ctx.compat(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `{_GETARGSPEC}`: " + _GETARGSPEC_WHY,
                _GETARGSPEC_MODERN,
            )
            return syntax.expression(_GETARGSPEC)
        if qualified == "skimage.morphology.skeletonize_3d":
            ctx.require_import(_SKELETON)
            ctx.compat(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `{_SKELETON}.skeletonize_3d`: " + _SKELETON_WHY,
                _SKELETON_MODERN,
            )
            return syntax.expression(f"{_SKELETON}.skeletonize_3d")
        if qualified == "skimage.io.imsave":
            ctx.require_import(_SKIMAGE_IO)
            ctx.compat(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `{_SKIMAGE_IO}.imsave`: " + _SKIMAGE_WHY,
                _SKIMAGE_MODERN,
            )
            return syntax.expression(f"{_SKIMAGE_IO}.imsave")
        if module == "scipy.signal" and name in _WINDOWS:
            ctx.change(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `...windows.{_WINDOWS[name]}`: removed from "
                "scipy.signal in SciPy 1.13; the same window function",
            )
            return updated.with_changes(
                value=cst.Attribute(value=updated.value, attr=cst.Name("windows")),
                attr=cst.Name(_WINDOWS[name]),
            )
        if module == "skimage.morphology" and name in _WATERSHED:
            ctx.require_import("skimage.segmentation")
            ctx.change(
                original,
                RULE,
                f"`{syntax.code(original)}` -> `skimage.segmentation.{name}`: {_WATERSHED_WHY}",
            )
            return syntax.expression(f"skimage.segmentation.{_WATERSHED[name]}")
        if module == "sklearn.cross_validation" and syntax.code(original.value) == module:
            if name not in _SAME_IN_MODEL_SELECTION:
                ctx.flag(original, RULE, f"`{qualified}`", _CROSS_VALIDATION_FIX)
                return updated
            ctx.change(original, RULE, f"`{qualified}` -> `sklearn.model_selection.{name}`")
            return syntax.expression(f"sklearn.model_selection.{name}")
        if qualified == "sklearn.externals.joblib" and syntax.code(original) == qualified:
            ctx.change(original, RULE, "`sklearn.externals.joblib` -> `joblib`")
            ctx.require_import("joblib")
            return cst.Name("joblib")
        return updated

    def leave_Subscript(self, ctx, original, updated):
        value = updated.value
        if not (isinstance(value, cst.Attribute) and value.attr.value == "ix"):
            return updated
        if not _ix_keys_are_labels(original):
            ctx.flag(
                original,
                RULE,
                f"`{syntax.code(original.value)}` (removed in pandas 1.0) with keys that are "
                "not all labels: .ix read integers as labels or positions by the index's type",
                f"use `{syntax.code(value.value)}.loc[...]` for labels or "
                f"`{syntax.code(value.value)}.iloc[...]` for positions.",
            )
            return updated
        ctx.change(
            original,
            RULE,
            "`.ix[...]` -> `.loc[...]`: removed in pandas 1.0; every key is a label",
        )
        return updated.with_changes(value=value.with_changes(attr=cst.Name("loc")))

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        module, _, name = qualified.rpartition(".")
        if module in _ALBUMENTATIONS and name in _BRIGHTNESS_CONTRAST:
            return self._brightness_contrast(ctx, original, updated, name)
        if module in (*_ALBUMENTATIONS, *_IAA_MODULES) and name in _ALBUMENTATIONS_IAA_COMPAT:
            why, modern = _ALBUMENTATIONS_IAA_COMPAT[name]
            return self._albumentations_compat(ctx, original, updated, name, why, modern)
        if module in _ALBUMENTATIONS and name == "GaussNoise":
            keywords = {arg.keyword.value for arg in original.args if arg.keyword is not None}
            if syntax.positional(original) or keywords & _GAUSS_NOISE_1X:
                return self._albumentations_compat(
                    ctx, original, updated, name, _GAUSS_NOISE_WHY, _GAUSS_NOISE_MODERN
                )
            return updated
        if qualified in _LABEL and syntax.keyword(original, "neighbors") is not None:
            return self._label_neighbors(ctx, original, updated)
        if qualified in _MEDIAN:
            return self._rank_median(ctx, original, updated)
        method = syntax.method_name(original)
        if method == "as_matrix":
            return self._as_matrix(ctx, original, updated)
        if method == "append":
            return self._append(ctx, original, updated)
        return updated

    def _rank_median(self, ctx, original, updated):
        """`median(image, mask=m)` (scikit-image 0.14) -> `rank.median(image, mask=m)`."""
        keywords = {arg.keyword.value for arg in original.args if arg.keyword is not None}
        if not (keywords & _MEDIAN_ONLY_014 or len(syntax.positional(original)) > 3):
            return updated  # arguments scikit-image 0.19+ still takes
        args = [
            arg.with_changes(keyword=cst.Name("footprint"))
            if arg.keyword is not None and arg.keyword.value == "selem"
            else arg
            for arg in updated.args
        ]
        ctx.require_import("skimage.filters.rank")
        ctx.change(
            original,
            RULE,
            f"`{syntax.code(original.func)}(..., {', '.join(sorted(keywords & _MEDIAN_ONLY_014))})`"
            f" -> `skimage.filters.rank.median`: {_MEDIAN_WHY}",
        )
        return updated.with_changes(
            func=syntax.expression("skimage.filters.rank.median"), args=args
        )

    def _label_neighbors(self, ctx, original, updated):
        """`label(image, neighbors=8)` -> `label(image, connectivity=image.ndim)` (0.14's reading)."""
        neighbors_arg = syntax.keyword(original, "neighbors")
        neighbors = "" if neighbors_arg is None else syntax.code(neighbors_arg.value)
        positional = syntax.positional(original)
        image_arg = positional[0] if positional else syntax.keyword(original, "input")
        image = None if image_arg is None else image_arg.value
        if (
            neighbors not in ("4", "8")
            or (neighbors == "8" and not isinstance(image, (cst.Name, cst.Attribute)))
            or syntax.keyword(original, "connectivity") is not None
            or syntax.has_star(original)
        ):
            ctx.flag(original, RULE, f"`label(..., neighbors={neighbors})`", _LABEL_FIX)
            return updated
        connectivity: cst.BaseExpression = cst.Integer("1")
        if neighbors == "8" and image is not None:
            connectivity = cst.Attribute(image, cst.Name("ndim"))
        args = []
        for arg in updated.args:
            if arg.keyword is not None and arg.keyword.value == "neighbors":
                arg = arg.with_changes(keyword=cst.Name("connectivity"), value=connectivity)
            elif arg.keyword is not None and arg.keyword.value == "input":
                arg = arg.with_changes(keyword=cst.Name("label_image"))
            args.append(arg)
        ctx.change(
            original,
            RULE,
            f"`label(..., neighbors={neighbors})` -> `connectivity="
            f"{syntax.code(connectivity)}`: removed in scikit-image 0.16; 0.14 read "
            "neighbors=4 as connectivity 1 and 8 as the image's number of dimensions",
        )
        return updated.with_changes(args=args)

    def _albumentations_compat(self, ctx, original, updated, name, why, modern):
        """`IAASharpen(...)` -> `parallel_keras.compat.albumentations.IAASharpen(...)`."""
        ctx.require_import(_ALBUMENTATIONS_COMPAT)
        ctx.require_package("albumentations")
        target = f"{_ALBUMENTATIONS_COMPAT}.{name}"
        ctx.compat(original, RULE, f"`{name}(...)` -> `{target}(...)`: {why}", f"`{modern}`")
        return updated.with_changes(func=syntax.expression(target))

    def _brightness_contrast(self, ctx, original, updated, name: str):
        """`RandomBrightness(limit, always_apply, p)` -> RandomBrightnessContrast(..., contrast_limit=0)."""
        if syntax.has_star(original):
            return updated
        order = ("limit", "always_apply", "p")
        given: dict[str, cst.BaseExpression] = {}
        for index, arg in enumerate(updated.args):
            key = arg.keyword.value if arg.keyword is not None else order[min(index, 2)]
            given[key] = arg.value
        if set(given) - set(order):
            return updated
        limit_keyword = _BRIGHTNESS_CONTRAST[name]
        other = "contrast_limit" if limit_keyword == "brightness_limit" else "brightness_limit"
        args = []
        if "limit" in given:
            args.append((limit_keyword, given["limit"]))
        args.append((other, cst.Integer("0")))
        always = given.get("always_apply")
        if always is not None and syntax.code(always) not in ("False", "0"):
            if syntax.code(always) not in ("True", "1"):
                return updated  # a run-time value: left as it is
            args.append(("p", cst.Float("1.0")))
        elif "p" in given:
            args.append(("p", given["p"]))
        func = updated.func
        if isinstance(func, cst.Name) and func.value == name:
            func = cst.Name("RandomBrightnessContrast")
        elif isinstance(func, cst.Attribute):
            func = func.with_changes(attr=cst.Name("RandomBrightnessContrast"))
        ctx.change(
            original,
            RULE,
            f"`{name}(...)` -> `RandomBrightnessContrast(..., {other}=0)`: removed in "
            "albumentations 1.4; its definition there (always_apply=True -> p=1.0)",
        )
        return updated.with_changes(
            func=func,
            args=[
                cst.Arg(
                    keyword=cst.Name(key),
                    value=value,
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
                for key, value in args
            ],
        )

    def _as_matrix(self, ctx, original, updated):
        receiver = updated.func.value
        args = list(updated.args)
        if len(args) > 1 or any(
            arg.star or (arg.keyword is not None and arg.keyword.value != "columns") for arg in args
        ):
            return updated
        if args:
            receiver = cst.Subscript(
                value=receiver, slice=[cst.SubscriptElement(cst.Index(args[0].value))]
            )
        ctx.change(
            original,
            RULE,
            "`.as_matrix()` -> `.to_numpy()`: removed in pandas 1.0; the same array",
        )
        return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("to_numpy")))

    def _append(self, ctx, original, updated):
        keywords = {arg.keyword.value for arg in original.args if arg.keyword is not None}
        positional = syntax.positional(original)
        pandas_keywords = keywords & _APPEND_KEYWORDS
        receiver = original.func.value
        frame_receiver = (isinstance(receiver, cst.Name) and receiver.value in self._frames) or (
            isinstance(receiver, cst.Call) and self._makes_frame(ctx, receiver)
        )
        if not (pandas_keywords or frame_receiver) or keywords - {*_APPEND_KEYWORDS, "other"}:
            return updated
        if len(positional) + ("other" in keywords) != 1 or syntax.has_star(original):
            return updated
        other_arg = positional[0] if positional else syntax.keyword(original, "other")
        if other_arg is None:
            return updated
        pandas = self._pandas or "pandas"
        other = other_arg.value
        if isinstance(other, cst.Dict):
            rows = f"{pandas}.DataFrame([{syntax.code(other)}])"
        elif isinstance(other, cst.List) and all(
            isinstance(e.value, cst.Dict) for e in other.elements
        ):
            rows = f"{pandas}.DataFrame({syntax.code(other)})"
        elif (isinstance(other, cst.Name) and other.value in self._frames) or (
            isinstance(other, cst.Call) and self._makes_frame(ctx, other)
        ):
            rows = syntax.code(other)
        else:
            ctx.flag(
                original,
                RULE,
                "`DataFrame.append` was removed in pandas 2.0, and what is appended is not "
                "known to be a DataFrame or rows",
                f"use `{pandas}.concat([{syntax.code(receiver)}, {syntax.code(other)}])` for a "
                f"DataFrame, `{pandas}.concat([{syntax.code(receiver)}, "
                f"{syntax.code(other)}.to_frame().T])` for a Series row.",
            )
            return updated
        extra = "".join(
            f", {arg.keyword.value}={syntax.code(arg.value)}"
            for arg in updated.args
            if arg.keyword is not None and arg.keyword.value != "other"
        )
        if self._pandas is None:
            ctx.require_import("pandas")
        ctx.change(
            original,
            RULE,
            f"`.append(...)` -> `{pandas}.concat([...])`: DataFrame.append was removed in "
            "pandas 2.0; the same frame",
        )
        return syntax.expression(
            f"{pandas}.concat([{syntax.code(updated.func.value)}, {rows}]{extra})"
        )
