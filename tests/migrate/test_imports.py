"""Tests of rules/imports.py: TF's Keras 2 paths, private names, preprocessing."""

from __future__ import annotations

import pathlib

import pytest

from parallel_keras.migrate.rules import imports
from tests.migrate.helpers import check_flag, check_rewrite

REWRITES = {
    "api_v1_applications": ("from tensorflow._api.v1.keras.applications import ResNet50\n",
                            "from keras.applications import ResNet50\n"),
    "api_v1_utils_next_to_multi_gpu_model": (
        "from tensorflow._api.v1.keras.utils import multi_gpu_model, to_categorical\n",
        "from keras.utils import to_categorical\nfrom parallel_keras import multi_gpu_model\n"),
    "python_keras_layers": ("from tensorflow.python.keras.layers import Dense\n",
                            "from keras.layers import Dense\n"),
    "compat_v1_moved_module": ("from tensorflow.compat.v1.keras.layers.merge import concatenate\n",
                               "from keras.layers import concatenate\n"),
    "import_as": ("import tensorflow.python.keras.backend as K\n", "import keras.backend as K\n"),
    "public_names_beside_a_private_one": (
        "from keras.layers.merge import Add\n", "from keras.layers import Add\n"),
    "pad_sequences_kept": ("from keras.preprocessing.sequence import pad_sequences\n",
                           "from keras.preprocessing.sequence import pad_sequences\n"),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_private_merge_is_never_moved():
    result = check_flag("from keras.layers.merge import _Merge, Add\n", "keras.layers.Layer",
                        "_merge_function")
    assert "from keras.layers.merge import _Merge\n" in result.migrated
    assert "from keras.layers import Add\n" in result.migrated
    assert "from keras.layers import _Merge" not in result.migrated


FLAGS = {
    "tokenizer": ("from keras.preprocessing.text import Tokenizer\n", "tf_keras"),
    "text_module": ("from keras.preprocessing import text\n", "TextVectorization"),
    "timeseries_generator": ("from keras.preprocessing.sequence import TimeseriesGenerator\n",
                             "timeseries_dataset_from_array"),
    "tokenizer_attribute": ("import keras\ntok = keras.preprocessing.text.Tokenizer(num_words=9)\n",
                            "tf_keras"),
    "timeseries_attribute": ("from keras.preprocessing import sequence\n"
                             "g = sequence.TimeseriesGenerator(x, y, length=3)\n",
                             "timeseries_dataset_from_array"),
    "image_iterator": ("from keras.preprocessing.image import load_img, random_rotation\n",
                       "RandomRotation"),
    "tf_path_without_keras3_module": (
        "from tensorflow.python.keras.utils.tf_utils import smart_cond\n", "public Keras 3"),
}


@pytest.mark.parametrize("before, word", FLAGS.values(), ids=FLAGS.keys())
def test_flags(before, word):
    check_flag(before, word)


def test_keras3_module_list_matches_installed_keras():
    import keras

    root = pathlib.Path(keras.__file__).parent
    installed = {"keras"} | {
        "keras." + ".".join(path.parent.relative_to(root).parts)
        for path in root.rglob("__init__.py")
        if path.parent != root and path.parent.relative_to(root).parts[0] not in ("src", "_tf_keras")
    }
    assert imports.KERAS3_MODULES <= installed


def test_flagged_preprocessing_names_are_gone_from_keras3():
    import keras

    for name in imports.PREPROCESSING_FLAGS:
        module, _, attribute = name.rpartition(".")
        if module == "keras.preprocessing":
            assert not hasattr(keras.preprocessing, attribute)
        else:
            assert not hasattr(getattr(keras.preprocessing, module.rpartition(".")[2], None)
                               or object(), attribute), name
