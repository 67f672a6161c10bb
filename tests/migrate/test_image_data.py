# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/image_data.py: ImageDataGenerator onto parallel_keras.compat."""

from __future__ import annotations

from parallel_keras.migrate.rules import image_data
from tests.migrate.helpers import check_rewrite


def test_flow_on_arrays_runs_through_compat_with_the_array_way_as_modern_form():
    result = check_rewrite(
        "from keras.preprocessing.image import ImageDataGenerator\n"
        "g = ImageDataGenerator(rotation_range=10, horizontal_flip=True)\n"
        "it = g.flow(x, y, batch_size=8)\n",
        "from parallel_keras.compat import ImageDataGenerator\n"
        "g = ImageDataGenerator(rotation_range=10, horizontal_flip=True)\n"
        "it = g.flow(x, y, batch_size=8)\n",
    )
    assert not result.report.flags
    [change] = [c for c in result.report.changes if c.rule == image_data.RULE]
    assert "from_tensor_slices" in change.modern and "RandomFlip" in change.modern
    assert "image_dataset_from_directory" not in change.modern
    assert result.report.requirements == [image_data.KERAS2_EXTRA]


def test_augmenting_folders_keep_the_other_imported_names():
    result = check_rewrite(
        "from keras.preprocessing.image import ImageDataGenerator, load_img\n"
        "g = ImageDataGenerator(rotation_range=10)\n"
        "it = g.flow_from_directory('d')\n",
        "from keras.preprocessing.image import load_img\n"
        "from parallel_keras.compat import ImageDataGenerator\n"
        "g = ImageDataGenerator(rotation_range=10)\n"
        "it = g.flow_from_directory('d')\n",
    )
    [change] = [c for c in result.report.changes if c.rule == image_data.RULE]
    assert "image_dataset_from_directory" in change.modern


def test_a_class_mode_the_dataset_reader_lacks_keeps_the_generator():
    result = check_rewrite(
        "from keras.preprocessing.image import ImageDataGenerator\n"
        "g = ImageDataGenerator(rescale=1 / 255.0)\n"
        "it = g.flow_from_directory('d', class_mode='input')\n",
        "from parallel_keras.compat import ImageDataGenerator\n"
        "g = ImageDataGenerator(rescale=1 / 255.0)\n"
        "it = g.flow_from_directory('d', class_mode='input')\n",
    )
    assert not result.report.flags


def test_a_dotted_generator_is_rewritten_in_place():
    result = check_rewrite(
        "import keras\n"
        "g = keras.preprocessing.image.ImageDataGenerator(zoom_range=0.1)\n"
        "it = g.flow(x, y)\n",
        "import keras\n"
        "import parallel_keras\n\n"
        "g = parallel_keras.compat.ImageDataGenerator(zoom_range=0.1)\n"
        "it = g.flow(x, y)\n",
    )
    assert result.report.requirements == [image_data.KERAS2_EXTRA]


def test_a_generator_subclassed_by_the_project_comes_from_compat():
    # PConv-Keras: `class AugmentingDataGenerator(ImageDataGenerator)` overriding flows.
    result = check_rewrite(
        "from keras.preprocessing.image import ImageDataGenerator\n"
        "class AugmentingDataGenerator(ImageDataGenerator):\n"
        "    def flow_from_directory(self, directory, *args, **kwargs):\n"
        "        yield from super().flow_from_directory(directory, *args, **kwargs)\n"
        "gen = AugmentingDataGenerator(rotation_range=10)\n",
        "from parallel_keras.compat import ImageDataGenerator\n"
        "class AugmentingDataGenerator(ImageDataGenerator):\n"
        "    def flow_from_directory(self, directory, *args, **kwargs):\n"
        "        yield from super().flow_from_directory(directory, *args, **kwargs)\n"
        "gen = AugmentingDataGenerator(rotation_range=10)\n",
    )
    assert not result.report.flags
    assert result.report.requirements == [image_data.KERAS2_EXTRA]
