# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/libraries.py: pandas, SciPy and scikit-learn removals.

Each rewrite is run: the migrated snippet executes with the installed pandas,
scikit-learn and Pillow, and gives what the Keras 2-era call gave.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import libraries
from tests.migrate.helpers import check_flag, check_rules, flags

# imgaug's own warning class breaks pytest-xdist's controller (see conftest).
pytestmark = pytest.mark.usefixtures("imgaug_warnings_stay_in_the_worker")

_RULE = libraries.LibrariesRule


def _run(source: str) -> dict:
    namespace: dict = {}
    exec(textwrap.dedent(source), namespace)  # The migrated script, as Python runs it.
    return namespace


def test_as_matrix_becomes_to_numpy_with_the_same_array():
    before = """\
        import pandas as pd
        df = pd.DataFrame({'a': [1, 2], 'b': [3.0, 4.0]})
        x = df.as_matrix()
        y = df.as_matrix(columns=['b'])
        z = df[['a']].as_matrix(['a'])
        """
    after = """\
        import pandas as pd
        df = pd.DataFrame({'a': [1, 2], 'b': [3.0, 4.0]})
        x = df.to_numpy()
        y = df[['b']].to_numpy()
        z = df[['a']][['a']].to_numpy()
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    np.testing.assert_array_equal(namespace["x"], [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(namespace["y"], [[3.0], [4.0]])
    np.testing.assert_array_equal(namespace["z"], [[1], [2]])


def test_ix_with_labels_becomes_loc_and_ambiguous_keys_are_flagged():
    before = """\
        import pandas as pd
        df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]}, index=['x', 'y', 'z'])
        col = df.ix[:, 'a']
        rows = df.ix['x':'y', ['a', 'b']]
        first = df.ix[0]
        """
    result = migrate.migrate_source(textwrap.dedent(before), rules=[_RULE()])
    assert "col = df.loc[:, 'a']" in result.migrated
    assert "rows = df.loc['x':'y', ['a', 'b']]" in result.migrated
    assert "first = df.ix[0]" in result.migrated
    (flag,) = flags(result, libraries.RULE)
    assert "df.loc[...]" in flag[2] and "df.iloc[...]" in flag[2]
    namespace = _run(result.migrated.replace("first = df.ix[0]", ""))
    assert namespace["col"].tolist() == [1, 2, 3]
    assert namespace["rows"].to_numpy().tolist() == [[1, 4], [2, 5]]


def test_append_becomes_concat_for_frames_and_rows():
    before = """\
        import pandas as pd
        df = pd.DataFrame({'a': [1], 'b': [2]})
        more = pd.DataFrame({'a': [3], 'b': [4]})
        df = df.append(more, ignore_index=True)
        df = df.append({'a': 5, 'b': 6}, ignore_index=True)
        df = df.append([{'a': 7, 'b': 8}], ignore_index=True)
        items = []
        items.append(3)
        """
    after = """\
        import pandas as pd
        df = pd.DataFrame({'a': [1], 'b': [2]})
        more = pd.DataFrame({'a': [3], 'b': [4]})
        df = pd.concat([df, more], ignore_index=True)
        df = pd.concat([df, pd.DataFrame([{'a': 5, 'b': 6}])], ignore_index=True)
        df = pd.concat([df, pd.DataFrame([{'a': 7, 'b': 8}])], ignore_index=True)
        items = []
        items.append(3)
        """
    result = check_rules(before, after, _RULE)
    frame = _run(result.migrated)["df"]
    assert frame.to_numpy().tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert frame.index.tolist() == [0, 1, 2, 3]


def test_append_of_an_unknown_value_is_flagged():
    source = "import pandas as pd\ndf = load()\ndf = df.append(row, ignore_index=True)\n"
    result = migrate.migrate_source(source, rules=[_RULE()])
    assert "df.append(row, ignore_index=True)" in result.migrated
    (flag,) = flags(result, libraries.RULE)
    assert "pd.concat([df, row])" in flag[2]


def test_sklearn_moves_run():
    before = """\
        from sklearn.cross_validation import train_test_split
        from sklearn.externals import joblib
        x_train, x_test = train_test_split(list(range(10)), test_size=0.2, random_state=0)
        """
    after = """\
        from sklearn.model_selection import train_test_split
        import joblib
        x_train, x_test = train_test_split(list(range(10)), test_size=0.2, random_state=0)
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    assert sorted(namespace["x_train"] + namespace["x_test"]) == list(range(10))
    assert len(namespace["x_test"]) == 2
    assert callable(namespace["joblib"].dump)


def test_sklearn_splitters_with_new_constructors_are_flagged():
    source = "from sklearn.cross_validation import KFold\nfolds = KFold(100, n_folds=5)\n"
    result = migrate.migrate_source(source, rules=[_RULE()])
    assert result.migrated.endswith(source)
    (flag,) = flags(result, libraries.RULE)
    assert "KFold(n_splits=n_folds)" in flag[2]


@pytest.mark.parametrize(
    "before, call",
    [
        ("from scipy.misc import imresize, imread\n", "imresize"),
        ("from scipy import misc\n", "misc.imresize"),
        ("import scipy.misc\n", "scipy.misc.imresize"),
    ],
)
def test_scipy_image_helpers_run_through_a_compatibility_path(tmp_path, before, call):
    pytest.importorskip("PIL")
    source = before + f"small = {call}(image, (4, 6))\nhalf = {call}(image, 50)\n"
    result = migrate.migrate_source(source, rules=[_RULE()])
    assert migrate.migrate_source(result.migrated, rules=[_RULE()]).migrated == result.migrated
    assert all(change.modern for change in result.report.changes if change.rule != "imports")
    assert result.report.requirements == ["pillow"]
    assert "parallel_keras.compat.scipy_misc" in result.migrated  # SciPy has no imresize now.
    # A float image: SciPy byte-scaled it to 0-255 before resizing, uint8 out.
    image = np.linspace(-1.0, 1.0, 8 * 12).reshape(8, 12)
    namespace: dict = {"image": image}
    exec(result.migrated, namespace)
    small, half = namespace["small"], namespace["half"]
    from PIL import Image

    scaled = ((image - image.min()) * 255 / (image.max() - image.min()) + 0.5).astype(np.uint8)
    expected = np.asarray(Image.fromarray(scaled).resize((6, 4), Image.BILINEAR))
    assert small.dtype == np.uint8
    np.testing.assert_array_equal(small, expected)
    np.testing.assert_array_equal(half, expected)  # 50 is a percentage.


def test_dataframe_frames_are_pandas_frames():
    # The rewrite's pandas is the installed one (pandas 2 has no append).
    assert not hasattr(pd.DataFrame, "append")
    assert not hasattr(pd.DataFrame, "as_matrix")


def test_scipy_signal_windows_move_to_their_module_and_run():
    before = """\
        import scipy.signal
        from scipy import signal
        from scipy.signal import gaussian, convolve, hanning
        a = gaussian(5, std=1.0)
        b = signal.hamming(4)
        c = scipy.signal.kaiser(4, 2.0)
        d = hanning(3)
        """
    after = """\
        import scipy.signal
        from scipy import signal
        from scipy.signal import convolve
        from scipy.signal.windows import gaussian, hann as hanning
        a = gaussian(5, std=1.0)
        b = signal.windows.hamming(4)
        c = scipy.signal.windows.kaiser(4, 2.0)
        d = hanning(3)
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    center = np.exp(-0.5 * (np.arange(5) - 2.0) ** 2)  # A Gaussian window, std 1.
    np.testing.assert_allclose(namespace["a"], center)
    np.testing.assert_allclose(namespace["b"], 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(4) / 3))
    np.testing.assert_allclose(namespace["d"], [0.0, 1.0, 0.0])
    assert namespace["c"].shape == (4,)


@pytest.mark.parametrize(
    "source, imported",
    [
        ("import imgaug as ia\nout = ia.augmenters.Fliplr(1.0).augment_image(image)\n", "ia"),
        (
            "from imgaug import augmenters as iaa\n"
            "out = iaa.Sequential([iaa.Fliplr(1.0)]).augment_image(image)\n",
            "iaa",
        ),
        ("import imgaug.augmenters as iaa\nout = iaa.Fliplr(1.0).augment_image(image)\n", "iaa"),
        (
            "import numpy as np, imgaug\nout = imgaug.augmenters.Fliplr(1.0).augment_image(image)\n",
            "imgaug",
        ),
        (
            "import imgaug.augmenters.flip, os\n"
            "out = imgaug.augmenters.flip.Fliplr(1.0).augment_image(image)\n",
            "imgaug",
        ),
        (
            "from imgaug.augmenters.flip import Fliplr as F\nout = F(1.0).augment_image(image)\n",
            "F",
        ),
    ],
)
def test_imgaug_runs_through_the_numpy1_compat_path_with_its_modern_form(source, imported):
    """imgaug 0.4.0 fails to import under NumPy 2 (np.sctypes); the migrated import runs it."""
    import importlib.util

    if importlib.util.find_spec("imgaug") is None:
        pytest.skip("imgaug 0.4.0 is not installed (pip install imgaug==0.4.0)")
    result = migrate.migrate_source(source, "augment.py")
    assert "parallel_keras.compat.imgaug" in result.migrated
    assert "import imgaug" not in result.migrated and "from imgaug" not in result.migrated
    assert not result.report.flags
    [change] = [c for c in result.report.changes if c.rule == libraries.RULE]
    assert "NumPy 1" in change.message and "albumentations" in change.modern
    assert "imgaug" in result.report.requirements
    assert migrate.migrate_source(result.migrated, "augment.py").migrated == result.migrated
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    namespace = _run_migrated(result.migrated, image=image)
    np.testing.assert_array_equal(namespace["out"], image[:, ::-1])
    assert namespace[imported] is not None


def _run_migrated(source: str, **names) -> dict:
    namespace = dict(names)
    exec(source, namespace)  # The migrated script, as Python runs it.
    return namespace


def test_a_star_import_of_imgaugs_package_is_flagged_with_the_names_to_import():
    result = check_flag(
        "from imgaug import *\n",
        "from parallel_keras.compat.imgaug import augmenters",
        "albumentations",
    )
    assert [flag.rule for flag in result.report.flags] == ["libraries"]


def test_skimage_imsave_of_a_float_colour_image_saves_what_scikit_image_014_saved(tmp_path):
    """scikit-image 0.14 saved a float (M, N, 3) image in [0, 1] as img_as_ubyte of it
    (its Pillow plugin); today's imsave hands the floats to Pillow, which refuses them."""
    pytest.importorskip("skimage")
    from PIL import Image
    from skimage import util

    before = """\
        import os
        import numpy as np
        from skimage import io
        from skimage.io import imread, imsave
        rgb = np.random.RandomState(0).rand(4, 5, 3)
        imsave(os.path.join(folder, 'rgb.png'), rgb)
        io.imsave(os.path.join(folder, 'gray.png'), rgb[..., 0])
        back = imread(os.path.join(folder, 'rgb.png'))
        """
    result = migrate.migrate_source(textwrap.dedent(before), "script.py")
    assert "from parallel_keras.compat.skimage_io import imread, imsave" in result.migrated
    compact = "".join(result.migrated.split())
    assert "parallel_keras.compat.skimage_io.imsave(os.path.join(folder,'gray.png')" in compact
    assert all(c.modern for c in result.report.changes if c.rule == libraries.RULE)
    namespace = {"folder": str(tmp_path)}
    exec(result.migrated, namespace)  # noqa: S102
    rgb = namespace["rgb"]
    np.testing.assert_array_equal(namespace["back"], util.img_as_ubyte(rgb))
    np.testing.assert_array_equal(
        np.asarray(Image.open(tmp_path / "rgb.png")), np.rint(rgb * 255).astype(np.uint8)
    )
    # A 2-D float PNG: 16 bits, img_as_uint, as 0.14's plugin wrote it.
    np.testing.assert_array_equal(
        np.asarray(Image.open(tmp_path / "gray.png")), util.img_as_uint(rgb[..., 0])
    )
    assert migrate.migrate_source(result.migrated, "script.py").migrated == result.migrated


@pytest.mark.parametrize(
    "source",
    [
        "import keras\nimport keras_resnet\nimport keras_resnet.models\n"
        "m = keras_resnet.models.ResNet18(keras.Input((32, 32, 3)), include_top=False)\n",
        "import keras\nfrom keras_resnet.models import ResNet18\n"
        "m = ResNet18(keras.Input((32, 32, 3)), include_top=False, freeze_bn=True)\n",
        "import keras\nimport keras_resnet.models as rm, keras_resnet.layers\n"
        "m = rm.ResNet18(keras.Input((32, 32, 3)), include_top=False)\n",
    ],
)
def test_keras_resnet_models_build_through_the_compat_path(source):
    """keras-resnet 0.2.0's models raise TypeError as Keras 3 builds them; migrated, they build."""
    import importlib.util

    if importlib.util.find_spec("keras_resnet") is None:
        pytest.skip("keras-resnet 0.2.0 is not installed (pip install keras-resnet)")
    result = migrate.migrate_source(source, "backbone.py")
    assert "import keras_resnet" not in result.migrated
    assert "from keras_resnet" not in result.migrated
    assert not result.report.flags
    assert "keras-resnet" in result.report.requirements
    changes = [c for c in result.report.changes if c.rule == libraries.RULE]
    assert changes and all("keras.applications.ResNet50" in c.modern for c in changes)
    assert migrate.migrate_source(result.migrated, "backbone.py").migrated == result.migrated
    model = _run_migrated(result.migrated)["m"]
    assert [tuple(o.shape) for o in model.outputs] == [
        (None, 8, 8, 64),
        (None, 4, 4, 128),
        (None, 2, 2, 256),
        (None, 1, 1, 512),
    ]
    assert model.get_layer("bn_conv1").trainable is ("freeze_bn=True" not in source)


def test_skopt_gbrt_minimize_runs_through_the_compat_path():
    """scikit-optimize 0.10.2's gbrt_minimize refuses its own surrogate on scikit-learn >= 1.6."""
    import importlib.util

    if importlib.util.find_spec("skopt") is None:
        pytest.skip("scikit-optimize is not installed")
    source = (
        "from skopt import gbrt_minimize\n"
        "import skopt.plots\n"
        "res = gbrt_minimize(lambda x: (x[0] - 0.3) ** 2, [(0.0, 1.0)], n_calls=12,\n"
        "                    n_random_starts=10, random_state=0)\n"
    )
    result = migrate.migrate_source(source, "search.py")
    assert "from parallel_keras.compat.skopt import gbrt_minimize" in result.migrated
    assert "import parallel_keras.compat.skopt.plots" in result.migrated
    assert not result.report.flags and "scikit-optimize" in result.report.requirements
    assert migrate.migrate_source(result.migrated, "search.py").migrated == result.migrated
    res = _run_migrated(result.migrated)["res"]
    assert len(res.func_vals) == 12 and res.fun == min(res.func_vals)


def test_albumentations_random_brightness_and_contrast_keep_albumentations_13s_values():
    """albumentations 1.4 removed RandomBrightness/RandomContrast; 1.3.1 defined them as
    RandomBrightnessContrast with the other limit 0, on uint8 a lookup table
    clip(x * alpha + beta * 255) truncated to uint8 (functional.py)."""
    pytest.importorskip("albumentations")
    source = (
        "import albumentations as A\n"
        "from albumentations import RandomBrightness, RandomContrast, Compose\n"
        "bright = Compose([RandomBrightness(limit=(0.1, 0.1), p=1.0)])(image=image)['image']\n"
        "contrast = A.RandomContrast((0.3, 0.3), True)(image=image)['image']\n"
    )
    result = migrate.migrate_source(source, "aug.py")
    assert "RandomBrightness(" not in result.migrated and "RandomContrast(" not in result.migrated
    assert not result.report.flags
    assert migrate.migrate_source(result.migrated, "aug.py").migrated == result.migrated
    image = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=-1)
    namespace = _run_migrated(result.migrated, image=image)
    table = np.arange(256, dtype=np.float32)
    brighter = np.clip(table + np.float32(0.1) * 255, 0, 255).astype(np.uint8)
    steeper = np.clip(table * np.float32(1.3), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(namespace["bright"], brighter[image])
    np.testing.assert_array_equal(namespace["contrast"], steeper[image])


def test_albumentations_iaa_transforms_and_gauss_noise_var_limit_run_as_in_1x():
    pytest.importorskip("albumentations")
    source = (
        "import albumentations as A\n"
        "from albumentations import IAASharpen, IAAEmboss, GaussNoise, Compose\n"
        "aug = Compose([IAASharpen(alpha=(0.3, 0.3), lightness=(1.0, 1.0), p=1.0),\n"
        "               A.IAAEmboss((0.2, 0.2), (0.5, 0.5), True),\n"
        "               GaussNoise(var_limit=(9.0, 9.0), p=1.0)])\n"
        "plain = GaussNoise(std_range=(0.1, 0.1), p=1.0)\n"
        "out = aug(image=image)['image']\n"
    )
    result = migrate.migrate_source(source, "aug.py")
    assert not result.report.flags and "albumentations" in result.report.requirements
    compat_lines = [c for c in result.report.changes if c.modern]
    assert len(compat_lines) == 3, compat_lines
    assert "A.Sharpen" in compat_lines[0].modern and "std_range" in compat_lines[2].modern
    assert "from albumentations import GaussNoise, Compose" in result.migrated  # 2.x's, kept
    assert migrate.migrate_source(result.migrated, "aug.py").migrated == result.migrated
    image = np.full((64, 64, 3), 100, dtype=np.uint8)
    out = _run_migrated(result.migrated, image=image)["out"]
    # Sharpen (lightness 1) and emboss matrices sum to 1: a flat image stays flat;
    # noise of variance 9 is std 3 grey levels (albumentations 2 ignored var_limit: ~80).
    assert abs(float(out.mean()) - 100) < 1.0, out.mean()
    assert 2.5 < float(out.astype(float).std()) < 3.5


def test_skimage_skeletonize_3d_keeps_scikit_image_022s_values():
    """scikit-image 0.22: uint8, 255 on the skeleton of a mask (0.25 removed it; the
    same thinning, skeletonize(method='lee'), returns booleans)."""
    source = (
        "import numpy as np\n"
        "import skimage.morphology\n"
        "from skimage.morphology import skeletonize_3d, disk\n"
        "skel = np.float32(skeletonize_3d(mask))\n"
        "again = skimage.morphology.skeletonize_3d(mask)\n"
        "footprint = disk(1)\n"
    )
    result = migrate.migrate_source(source, "signals.py")
    assert not result.report.flags and "skeletonize_3d(" in result.migrated
    assert migrate.migrate_source(result.migrated, "signals.py").migrated == result.migrated
    from skimage import morphology

    mask = np.zeros((12, 15), dtype=bool)
    mask[3:9, 2:13] = True
    namespace = _run_migrated(result.migrated, mask=mask)
    lee = morphology.skeletonize(mask, method="lee")
    assert lee.any() and lee.dtype == bool
    np.testing.assert_array_equal(namespace["skel"], np.float32(lee) * 255)
    assert namespace["again"].dtype == np.uint8
    np.testing.assert_array_equal(namespace["footprint"], morphology.disk(1))


def test_skimage_watershed_moves_to_segmentation_and_runs():
    """dsb2018_selim: `from skimage.morphology import dilation, watershed, square`."""
    before = """\
        import numpy as np
        import skimage.morphology
        from skimage import morphology
        from skimage.morphology import dilation, watershed, square
        markers = np.zeros((6, 6), int)
        markers[1, 1], markers[4, 4] = 1, 2
        mask = np.ones((6, 6), bool)
        a = watershed(np.zeros((6, 6)), markers, mask=mask, watershed_line=True)
        b = morphology.watershed(np.zeros((6, 6)), markers)
        c = skimage.morphology.watershed(np.zeros((6, 6)), markers)
        d = dilation(markers > 0, square(3))
        """
    after = """\
        import numpy as np
        import skimage.morphology
        from skimage.morphology import dilation, square
        from skimage.segmentation import watershed
        import skimage.segmentation

        markers = np.zeros((6, 6), int)
        markers[1, 1], markers[4, 4] = 1, 2
        mask = np.ones((6, 6), bool)
        a = watershed(np.zeros((6, 6)), markers, mask=mask, watershed_line=True)
        b = skimage.segmentation.watershed(np.zeros((6, 6)), markers)
        c = skimage.segmentation.watershed(np.zeros((6, 6)), markers)
        d = dilation(markers > 0, square(3))
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    assert set(np.unique(namespace["a"])) == {0, 1, 2}  # two basins and the line between
    assert set(np.unique(namespace["b"])) == {1, 2}
    np.testing.assert_array_equal(namespace["b"], namespace["c"])
    assert namespace["d"].sum() == 18


def test_skimage_label_neighbors_becomes_the_connectivity_scikit_image_014_read():
    before = """\
        import numpy as np
        from skimage import measure
        from skimage.measure import label
        diagonal = np.eye(3, dtype=int)
        volume = np.zeros((2, 2, 2), int)
        volume[0, 0, 0] = volume[1, 1, 1] = 1
        four = measure.label(diagonal, neighbors=4, background=0)
        eight = label(diagonal, neighbors=8, background=0)
        eight_3d = measure.label(input=volume, neighbors=8)
        """
    after = """\
        import numpy as np
        from skimage import measure
        from skimage.measure import label
        diagonal = np.eye(3, dtype=int)
        volume = np.zeros((2, 2, 2), int)
        volume[0, 0, 0] = volume[1, 1, 1] = 1
        four = measure.label(diagonal, connectivity=1, background=0)
        eight = label(diagonal, connectivity=diagonal.ndim, background=0)
        eight_3d = measure.label(label_image=volume, connectivity=volume.ndim)
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    assert namespace["four"].max() == 3  # 4-connected: three separate pixels
    assert namespace["eight"].max() == 1  # 8-connected: one diagonal line
    assert namespace["eight_3d"].max() == 1  # 8 meant the full 3D connectivity


def test_skimage_label_neighbors_of_an_expression_is_flagged():
    result = check_flag(
        "from skimage import measure\nlabels = measure.label(mask > 0, neighbors=8)\n",
        "connectivity=image.ndim",
    )
    assert [flag.rule for flag in result.report.flags] == ["libraries"]


def test_skimage_median_with_a_mask_runs_scikit_image_014s_rank_median():
    """dsb2018_selim: `median(channel, mask=edge)` (0.14: the rank filter, neighbours in the mask)."""
    before = """\
        import numpy as np
        from skimage.filters import median
        image = (np.arange(25, dtype=np.uint8).reshape(5, 5) * 7 % 50).astype(np.uint8)
        mask = np.zeros((5, 5), bool)
        mask[1:4, 1:4] = True
        masked = median(image, mask=mask)
        plain = median(image)
        """
    after = """\
        import numpy as np
        from skimage.filters import median
        import skimage.filters.rank

        image = (np.arange(25, dtype=np.uint8).reshape(5, 5) * 7 % 50).astype(np.uint8)
        mask = np.zeros((5, 5), bool)
        mask[1:4, 1:4] = True
        masked = skimage.filters.rank.median(image, mask=mask)
        plain = median(image)
        """
    result = check_rules(before, after, _RULE)
    namespace = _run(result.migrated)
    image, masked = namespace["image"], namespace["masked"]
    # Each pixel: the median of its 3x3 neighbours that lie in the mask.
    assert masked[2, 2] == np.median(image[1:4, 1:4])
    assert masked[0, 0] == image[1, 1]  # its only neighbour in the mask
