# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/imports.py: TF's Keras 2 paths, private names, preprocessing."""

from __future__ import annotations

import operator
import pathlib
import textwrap

import pytest

from parallel_keras import compat
from parallel_keras.migrate import keras2_modules
from parallel_keras.migrate.rules import imports
from tests.migrate.helpers import check_flag, check_rewrite

REWRITES = {
    "api_v1_applications": (
        "from tensorflow._api.v1.keras.applications import ResNet50\n",
        "from keras.applications import ResNet50\n",
    ),
    "api_v1_utils_next_to_multi_gpu_model": (
        "from tensorflow._api.v1.keras.utils import multi_gpu_model, to_categorical\n",
        "from keras.utils import to_categorical\nfrom parallel_keras import multi_gpu_model\n",
    ),
    "python_keras_layers": (
        "from tensorflow.python.keras.layers import Dense\n",
        "from keras.layers import Dense\n",
    ),
    "compat_v1_moved_module": (
        "from tensorflow.compat.v1.keras.layers.merge import concatenate\n",
        "from keras.layers import concatenate\n",
    ),
    "import_as": ("import tensorflow.python.keras.backend as K\n", "import keras.backend as K\n"),
    "public_names_beside_a_private_one": (
        "from keras.layers.merge import Add\n",
        "from keras.layers import Add\n",
    ),
    "pad_sequences_kept": (
        "from keras.preprocessing.sequence import pad_sequences\n",
        "from keras.preprocessing.sequence import pad_sequences\n",
    ),
}


@pytest.mark.parametrize("before, after", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after):
    check_rewrite(before, after)


def test_private_merge_becomes_the_compat_merge_base():
    result = check_rewrite(
        "from keras.layers.merge import _Merge, Add\n",
        "from keras.layers import Add\nfrom parallel_keras.compat import Merge as _Merge\n",
    )
    assert not result.report.flags
    [change] = [c for c in result.report.changes if c.modern]
    assert "keras.layers.Layer" in change.modern


# Keras 2 names Keras 3 lacks, imported from parallel_keras.compat instead.
COMPAT = {
    "tokenizer": (
        "from keras.preprocessing.text import Tokenizer\n",
        "from parallel_keras.compat import Tokenizer\n",
    ),
    "text_module": (
        "from keras.preprocessing import text\nt = text.Tokenizer()\n",
        "from parallel_keras import compat as text\nt = text.Tokenizer()\n",
    ),
    "timeseries_generator": (
        "from keras.preprocessing.sequence import TimeseriesGenerator, pad_sequences\n",
        "from keras.preprocessing.sequence import pad_sequences\n"
        "from parallel_keras.compat import TimeseriesGenerator\n",
    ),
    "tokenizer_attribute": (
        "import keras\ntok = keras.preprocessing.text.Tokenizer(num_words=9)\n",
        "import keras\nimport parallel_keras\n\n"
        "tok = parallel_keras.compat.Tokenizer(num_words=9)\n",
    ),
    "timeseries_attribute": (
        "from keras.preprocessing import sequence\ng = sequence.TimeseriesGenerator(x, y, length=3)\n",
        "from keras.preprocessing import sequence\nimport parallel_keras\n\n"
        "g = parallel_keras.compat.TimeseriesGenerator(x, y, length=3)\n",
    ),
    "image_iterator": (
        "from keras.preprocessing.image import load_img, random_rotation\n",
        "from keras.preprocessing.image import load_img\n"
        "from parallel_keras.compat import random_rotation\n",
    ),
    "enqueuer": (
        "from keras.utils.data_utils import GeneratorEnqueuer, get_file\n",
        "from keras.utils import get_file\nfrom parallel_keras.compat import GeneratorEnqueuer\n",
    ),
    "network": (
        "from keras.engine.topology import Network, Layer\n",
        "from keras.layers import Layer\nfrom parallel_keras.compat import Network\n",
    ),
    "conv_utils_module": (
        "from keras.utils import conv_utils\nk = conv_utils.normalize_tuple(3, 2, 'k')\n",
        "from parallel_keras.compat import conv_utils\nk = conv_utils.normalize_tuple(3, 2, 'k')\n",
    ),
    "conv_utils_dotted": (
        "import keras\nk = keras.utils.conv_utils.normalize_tuple(3, 2, 'k')\n",
        "import keras\nimport parallel_keras\n\n"
        "k = parallel_keras.compat.conv_utils.normalize_tuple(3, 2, 'k')\n",
    ),
    "obtain_input_shape": (
        "from keras_applications.imagenet_utils import _obtain_input_shape\n",
        "from parallel_keras.compat import obtain_input_shape as _obtain_input_shape\n",
    ),
    "generic_utils": (
        "from keras.utils.generic_utils import to_list, Progbar\n",
        "from parallel_keras.compat.generic_utils import to_list\nfrom keras.utils import Progbar\n",
    ),
}


@pytest.mark.parametrize("before, after", COMPAT.values(), ids=COMPAT.keys())
def test_names_keras3_lacks_come_from_parallel_keras_compat(before, after):
    result = check_rewrite(before, after)
    assert not result.report.flags
    assert any(change.modern for change in result.report.changes)
    namespace = {"x": [[1.0], [2.0], [3.0], [4.0]], "y": [1.0, 2.0, 3.0, 4.0]}
    exec(result.migrated, namespace)  # noqa: S102  Every rewritten import resolves.


FLAGS = {
    "tf_path_without_keras3_module": (
        "from tensorflow.python.keras.utils.tf_utils import smart_cond\n",
        "public Keras 3",
    ),
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
        if path.parent != root
        and path.parent.relative_to(root).parts[0] not in ("src", "_tf_keras")
    }
    assert keras2_modules.KERAS3_MODULES <= installed


def test_flagged_preprocessing_names_are_gone_from_keras3():
    import keras

    for name in imports.PREPROCESSING_FLAGS:
        module, _, attribute = name.rpartition(".")
        if module == "keras.preprocessing":
            assert not hasattr(keras.preprocessing, attribute)
        else:
            assert not hasattr(
                getattr(keras.preprocessing, module.rpartition(".")[2], None) or object(), attribute
            ), name


# `np_utils` and the other Keras 2 module paths, in every import form
# (tester finding F1: beside multi_gpu_model it was neither moved nor flagged).
MODULE_MOVES = {
    "np_utils_by_name": (
        "from keras.utils import np_utils\ny = np_utils.to_categorical([1, 0], 2)\n",
        ("from keras import utils as np_utils\ny = np_utils.to_categorical([1, 0], 2)\n"),
    ),
    "np_utils_beside_multi_gpu_model": (
        "from keras.utils import multi_gpu_model, np_utils\n",
        "from keras import utils as np_utils\nfrom parallel_keras import multi_gpu_model\n",
    ),
    "np_utils_beside_multi_gpu_model_in_a_block": (
        (
            "try:\n    from keras.utils import np_utils, multi_gpu_model\nexcept ImportError:\n"
            "    pass\n"
        ),
        (
            "try:\n    from keras import utils as np_utils\n"
            "    from parallel_keras import multi_gpu_model\nexcept ImportError:\n    pass\n"
        ),
    ),
    "np_utils_aliased": (
        "from keras.utils import np_utils as nu\n",
        "from keras import utils as nu\n",
    ),
    "np_utils_names": (
        "from keras.utils.np_utils import to_categorical, normalize\n",
        "from keras.utils import to_categorical, normalize\n",
    ),
    "np_utils_dotted": (
        "import keras\ny = keras.utils.np_utils.to_categorical([1], 2)\n",
        "import keras\ny = keras.utils.to_categorical([1], 2)\n",
    ),
    "tf_np_utils_dotted": (
        "import tensorflow as tf\ny = tf.keras.utils.np_utils.to_categorical([1], 2)\n",
        "import tensorflow as tf\ny = tf.keras.utils.to_categorical([1], 2)\n",
    ),
    "obtain_input_shape": (
        "from keras_applications.imagenet_utils import _obtain_input_shape\n",
        "from parallel_keras.compat import obtain_input_shape as _obtain_input_shape\n",
    ),
    "generic_utils": (
        "from keras.utils.generic_utils import get_custom_objects, Progbar\n",
        "from keras.utils import get_custom_objects, Progbar\n",
    ),
    "data_utils": (
        "from keras.utils.data_utils import get_file, Sequence\n",
        "from keras.utils import get_file, Sequence\n",
    ),
    "vis_utils": (
        "from keras.utils.vis_utils import plot_model\n",
        "from keras.utils import plot_model\n",
    ),
    "io_utils_module": (
        "from keras.utils import io_utils\n",
        "from keras import utils as io_utils\n",
    ),
    "engine_saving": (
        "from keras.engine.saving import load_model\n",
        "from keras.models import load_model\n",
    ),
    "engine_sequential": (
        "from keras.engine.sequential import Sequential\n",
        "from keras.models import Sequential\n",
    ),
    "engine_input_layer_names": (
        "from keras.engine import Input, InputSpec, Layer\n",
        "from keras.layers import Input, InputSpec, Layer\n",
    ),
    "layers_core_module": ("from keras.layers import core\n", "from keras import layers as core\n"),
    "convolutional_recurrent": (
        "from keras.layers.convolutional_recurrent import ConvLSTM2D\n",
        "from keras.layers import ConvLSTM2D\n",
    ),
    "tf_recurrent_v2": (
        "from tensorflow.python.keras.layers.recurrent_v2 import LSTM\n",
        "from keras.layers import LSTM\n",
    ),
    "experimental_preprocessing_module": (
        "from tensorflow.keras.layers.experimental import preprocessing\n",
        "from keras import layers as preprocessing\n",
    ),
    "experimental_preprocessing_names": (
        "from tensorflow.keras.layers.experimental.preprocessing import Rescaling, RandomFlip\n",
        "from keras.layers import Rescaling, RandomFlip\n",
    ),
    "experimental_preprocessing_dotted": (
        "import tensorflow as tf\nf = tf.keras.layers.experimental.preprocessing.RandomFlip()\n",
        "import tensorflow as tf\nf = tf.keras.layers.RandomFlip()\n",
    ),
    "mobilenetv2": (
        "from keras.applications.mobilenetv2 import MobileNetV2\n",
        "from keras.applications.mobilenet_v2 import MobileNetV2\n",
    ),
    "applications_submodule_kept": (
        "from keras.applications.resnet50 import preprocess_input\n",
        "from keras.applications.resnet50 import preprocess_input\n",
    ),
    "keras_applications_helpers": (
        "from keras_applications.imagenet_utils import decode_predictions\n"
        "from keras_applications.imagenet_utils import preprocess_input as _preprocess_input\n",
        "from keras.applications.imagenet_utils import decode_predictions\n"
        "from keras.applications.imagenet_utils import preprocess_input as _preprocess_input\n",
    ),
    "keras1_objectives": (
        "from keras import objectives\n",
        "from keras import losses as objectives\n",
    ),
}


@pytest.mark.parametrize("before, after", MODULE_MOVES.values(), ids=MODULE_MOVES.keys())
def test_module_moves(before, after):
    check_rewrite(before, after)


@pytest.mark.parametrize("key", [key for key in MODULE_MOVES if "multi_gpu" not in key])
def test_moved_imports_run_under_keras3(key):
    # The rewritten statements execute: every target name exists in Keras 3.
    import numpy as np

    exec(MODULE_MOVES[key][1], {"np": np, "f": None})  # noqa: S102


def test_split_line_is_reported_at_its_own_line():
    result = check_rewrite(
        "from keras.utils import np_utils\nimport os\nfrom keras.utils import multi_gpu_model, "
        "np_utils\n",
        "from keras import utils as np_utils\nimport os\nfrom keras import utils as np_utils\n"
        "from parallel_keras import multi_gpu_model\n",
    )
    lines = sorted(c.line for c in result.report.changes if c.rule == imports.RULE)
    assert lines == [1, 3]


REMOVED = {
    "hdf5matrix": ("from keras.utils.io_utils import HDF5Matrix\n", "h5py"),
    "hdf5matrix_dotted": (
        "import keras\nx = keras.utils.io_utils.HDF5Matrix('d.h5', 'x')\n",
        "h5py",
    ),
    "probas_to_classes": ("from keras.utils.np_utils import probas_to_classes\n", "np.argmax"),
    "probas_to_classes_by_module": (
        ("from keras.utils import np_utils\nc = np_utils.probas_to_classes(p)\n"),
        "np.argmax",
    ),
    "keras1_plot": ("from keras.utils.visualize_util import plot\n", "plot_model"),
    "model_from_yaml": ("from keras.engine.saving import model_from_yaml\n", "to_json"),
    "load_weights_helper": (
        "from keras.engine.saving import load_weights_from_hdf5_group\n",
        "load_weights",
    ),
    "locally_connected": ("from keras.layers import Dense, LocallyConnected2D\n", "tf_keras"),
    "locally_connected_dotted": (
        "import keras\nl = keras.layers.LocallyConnected1D(4, 3)\n",
        "tf_keras",
    ),
    "locally_connected_module": ("from keras.layers.local import LocallyConnected2D\n", "tf_keras"),
    "sync_batch_norm": (
        "from tensorflow.keras.layers.experimental import SyncBatchNormalization\n",
        "synchronized=True",
    ),
    "scikit_learn": ("from keras.wrappers.scikit_learn import KerasClassifier\n", "scikeras"),
    "tf_scikit_learn": (
        "from tensorflow.keras.wrappers.scikit_learn import KerasRegressor\n",
        "SKLearnRegressor",
    ),
    "scikit_learn_module": ("from keras.wrappers import scikit_learn\n", "scikeras"),
    "scikit_learn_import": ("import keras.wrappers.scikit_learn\n", "scikeras"),
    "scikit_learn_dotted": (
        "import keras\nc = keras.wrappers.scikit_learn.KerasClassifier(f)\n",
        "scikeras",
    ),
    # Used for more than the @interfaces.legacy_* decorators (those and an unused
    # import are removed: tests/migrate/test_legacy_interfaces.py).
    "legacy_interfaces": (
        "from keras.legacy import interfaces\nf = interfaces.generate_legacy_interface\n",
        "legacy_*",
    ),
}


@pytest.mark.parametrize("before, word", REMOVED.values(), ids=REMOVED.keys())
def test_removed_names_are_kept_and_flagged(before, word):
    result = check_flag(before, word)
    assert result.report.flags
    # The flagged statement itself is kept (the script fails loudly there).
    assert textwrap.dedent(before).splitlines()[-1] in result.migrated


def test_removed_names_keep_their_neighbours_moving():
    result = check_flag(
        "from keras.utils.io_utils import HDF5Matrix\n"
        "from keras.utils.np_utils import probas_to_classes, to_categorical\n",
        "np.argmax",
    )
    assert (
        "from keras.utils.np_utils import probas_to_classes\nfrom keras.utils import to_categorical\n"
        in result.migrated
    )


def _keras3_has(qualified: str) -> bool:
    import importlib

    module, _, name = qualified.rpartition(".")
    return hasattr(importlib.import_module(module), name)


def test_moved_module_targets_exist_in_keras3():
    import importlib

    targets = {*keras2_modules.MOVED_MODULES.values(), *keras2_modules.NAME_HOMES.values()}
    for target in targets:
        assert target in keras2_modules.KERAS3_MODULES or target.startswith("parallel_keras.compat")
        importlib.import_module(target)
    for name, home in keras2_modules.NAME_HOMES.items():
        assert _keras3_has(f"{home}.{name}"), name


def test_removed_names_are_absent_from_keras3():
    for qualified in imports.REMOVED_NAMES:
        assert not _keras3_has(qualified), qualified
    import keras

    assert not hasattr(keras.wrappers, "scikit_learn")


# The public names of Keras 2.3.1's moved modules (read from its wheel): each
# must be moved to a Keras 3 module that has it, or flagged.
KERAS2_NAMES = {
    "keras.utils.np_utils": "to_categorical normalize",
    "keras.utils.generic_utils": "CustomObjectScope Progbar custom_object_scope "
    "deserialize_keras_object serialize_keras_object get_custom_objects func_dump func_load "
    "has_arg to_list unpack_singleton slice_arrays object_list_uid",
    "keras.utils.data_utils": "GeneratorEnqueuer OrderedEnqueuer Sequence SequenceEnqueuer "
    "get_file validate_file",
    "keras.utils.vis_utils": "model_to_dot plot_model",
    "keras.utils.io_utils": "H5Dict HDF5Matrix ask_to_proceed_with_overwrite",
    "keras.utils.layer_utils": "convert_all_kernels_in_model convert_dense_weights_data_format "
    "convert_kernel count_params get_source_inputs",
    "keras.utils.conv_utils": "conv_input_length conv_output_length convert_kernel deconv_length "
    "normalize_padding normalize_tuple",
    "keras.engine": "Input InputLayer InputSpec Layer Model get_source_inputs",
    "keras.engine.topology": "Input InputLayer InputSpec Layer Network Node get_source_inputs",
    "keras.engine.network": "Network",
    "keras.engine.training": "Model",
    "keras.engine.sequential": "Sequential Model",
    "keras.engine.saving": "load_model save_model model_from_json model_from_yaml "
    "model_from_config load_weights_from_hdf5_group load_weights_from_hdf5_group_by_name "
    "preprocess_weights_for_loading save_weights_to_hdf5_group",
    "keras.engine.base_layer": "InputSpec Layer",
    "keras.engine.input_layer": "Input InputLayer",
    "keras.layers.local": "LocallyConnected1D LocallyConnected2D",
    "keras.layers.convolutional_recurrent": "ConvLSTM2D",
}


@pytest.mark.parametrize("module", KERAS2_NAMES)
def test_every_keras2_name_is_moved_or_flagged(module):
    for name in KERAS2_NAMES[module].split():
        target = keras2_modules.MOVED_MODULES[module]
        home = keras2_modules.NAME_HOMES.get(name, target)
        if f"{home}.{name}" in imports.REMOVED_NAMES:
            assert imports._removed_fix(f"{module}.{name}") is not None, name
        elif imports.compat_name(f"{module}.{name}") is not None:
            target = imports.compat_name(f"{module}.{name}")[0]
            assert operator.attrgetter(target)(compat), name
        else:
            assert _keras3_has(f"{home}.{name}"), f"{module}.{name} -> {home}"


@pytest.mark.parametrize(
    "before, after",
    [
        (
            "from tensorflow.python import keras\nx = keras.layers.Dense(2)\n",
            "import keras\nx = keras.layers.Dense(2)\n",
        ),
        (
            "from tensorflow.python import keras as tk, ops\n",
            "from tensorflow.python import ops\nimport keras as tk\n",
        ),
    ],
)
def test_keras_package_imported_from_tensorflow_python_becomes_keras(before, after):
    # It crashed migrate (an empty module name for `from ... import keras`).
    check_rewrite(before, after)


@pytest.mark.parametrize(
    "before, after, names",
    [
        ("from keras.layers.core import *\n", "from keras.layers import *\n", ("Dense", "Lambda")),
        (
            "from keras.layers.convolutional import *\n",
            "from keras.layers import *\n",
            ("Conv2D", "UpSampling2D"),
        ),
        (
            "from keras.engine import *\n",
            "from keras.layers import *\nfrom keras.models import Model\n",
            ("InputSpec", "Layer", "Input", "Model"),
        ),
    ],
)
def test_a_star_import_of_a_keras2_module_comes_from_its_keras3_home(before, after, names):
    namespace: dict = {}
    with pytest.raises(ModuleNotFoundError):
        exec(before, namespace)  # noqa: S102
    result = check_rewrite(before, after)
    assert not result.report.flags
    exec(result.migrated, namespace)  # noqa: S102
    for name in names:
        assert name in namespace, name


def test_tfoptimizer_is_flagged_and_imported_from_compat_so_the_module_imports():
    result = check_flag("from keras.optimizers import TFOptimizer, Adam\n", "keras.optimizers")
    assert "`keras.optimizers.TFOptimizer` does not exist in Keras 3" in [
        flag.message for flag in result.report.flags
    ]
    assert "from parallel_keras.compat import TFOptimizer" in result.migrated
    exec(result.migrated, {})  # noqa: S102


def test_clip_norm_runs_through_compat():
    result = check_rewrite(
        "from keras.optimizers import clip_norm, Adam\n",
        "from keras.optimizers import Adam\nfrom parallel_keras.compat import clip_norm\n",
    )
    assert not result.report.flags
