# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/image_data.py: advice for ImageDataGenerator.flow on arrays."""

from __future__ import annotations

from tests.migrate.helpers import check_flag


def test_flow_on_arrays_gets_array_advice():
    result = check_flag(
        "from keras.preprocessing.image import ImageDataGenerator\n"
        "g = ImageDataGenerator(rotation_range=10, horizontal_flip=True)\n"
        "it = g.flow(x, y, batch_size=8)\n",
        "from_tensor_slices",
        "RandomFlip",
        "tf_keras",
    )
    assert "flow_from_directory" not in result.report.flags[0].action
    assert "image_dataset_from_directory" not in result.report.flags[0].action


def test_folders_keep_folder_advice():
    check_flag(
        "from keras.preprocessing.image import ImageDataGenerator\n"
        "g = ImageDataGenerator(rotation_range=10)\n"
        "it = g.flow_from_directory('d')\n",
        "image_dataset_from_directory",
    )
