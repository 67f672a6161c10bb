# SPDX-License-Identifier: Apache-2.0
"""Where the names of Keras 2's module files live in Keras 3.

Keras 2 scripts import from implementation modules Keras 3 removed
(`keras.layers.embeddings`, `keras.engine.topology`, `keras.utils.np_utils`,
...); Keras 3 exports the same names from its public packages. The imports
rule (`rules/imports.py`) rewrites those imports with these tables, and
`Context.qualified_name` names a use as Keras 3 does with `keras3_name`, so
every other rule matches `from keras.layers.embeddings import Embedding` on
the first run, as it matches `from keras.layers import Embedding`.

This module sits below `context.py` and the rules: it imports only `syntax`.
"""

from __future__ import annotations

import functools

from parallel_keras.migrate import syntax

# Legacy module (canonical spelling) -> the Keras 3 module holding its names.
MOVED_MODULES = {
    "keras.layers.merge": "keras.layers",
    "keras.layers.advanced_activations": "keras.layers",
    "keras.layers.core": "keras.layers",
    "keras.layers.convolutional": "keras.layers",
    "keras.layers.pooling": "keras.layers",
    "keras.layers.normalization": "keras.layers",
    "keras.layers.recurrent": "keras.layers",
    "keras.layers.embeddings": "keras.layers",
    "keras.layers.wrappers": "keras.layers",
    "keras.layers.noise": "keras.layers",
    "keras.engine": "keras.layers",
    "keras.engine.topology": "keras.layers",
    "keras.engine.base_layer": "keras.layers",
    "keras.engine.input_layer": "keras.layers",
    "keras.engine.training": "keras.models",
    "keras.utils.np_utils": "keras.utils",
    "keras.utils.generic_utils": "parallel_keras.compat.generic_utils",
    "keras.utils.data_utils": "keras.utils",
    "keras.utils.vis_utils": "keras.utils",
    "keras.utils.layer_utils": "keras.utils",
    "keras.backend.tensorflow_backend": "keras.backend",
    # Found by `parallel-keras migrate` testers in 2017-2021 scripts (Keras
    # 2.0-2.3 module files, tf.keras 2.x implementation modules, Keras 1).
    "keras.layers.cudnn_recurrent": "keras.layers",
    "keras.layers.convolutional_recurrent": "keras.layers",
    "keras.layers.local": "keras.layers",
    "keras.layers.normalization_v2": "keras.layers",
    "keras.layers.recurrent_v2": "keras.layers",
    "keras.layers.dense_attention": "keras.layers",
    "keras.layers.experimental": "keras.layers",
    "keras.layers.experimental.preprocessing": "keras.layers",
    "keras.engine.sequential": "keras.models",
    "keras.engine.network": "keras.models",
    "keras.engine.functional": "keras.models",
    "keras.engine.saving": "keras.models",
    "keras.engine.input_spec": "keras.layers",
    "keras.utils.io_utils": "keras.utils",
    "keras.utils.conv_utils": "parallel_keras.compat.conv_utils",
    "keras.utils.all_utils": "keras.utils",
    "keras.utils.dataset_utils": "keras.utils",
    "keras.utils.visualize_util": "keras.utils",
    "keras.applications.mobilenetv2": "keras.applications.mobilenet_v2",
    # The Keras 2-era `keras_applications` package (copied EfficientNet /
    # ResNeXt code imports its helpers): Keras 3's module has the same
    # decode_predictions and preprocess_input (its model functions needed
    # Keras 2's backend= / layers= injection and stay as they are).
    "keras_applications.imagenet_utils": "keras.applications.imagenet_utils",
    "keras.objectives": "keras.losses",
}
# Names of a moved module that live elsewhere than the module's new home.
NAME_HOMES = {
    "Model": "keras.models",
    "Sequential": "keras.models",
    "load_model": "keras.models",
    "save_model": "keras.models",
    "model_from_json": "keras.models",
    "Input": "keras.layers",
    "InputLayer": "keras.layers",
    "InputSpec": "keras.layers",
    "Layer": "keras.layers",
    "get_source_inputs": "keras.utils",
    "to_categorical": "keras.utils",
    "Progbar": "keras.utils",
    "get_custom_objects": "keras.utils",
    "CustomObjectScope": "keras.utils",
    "custom_object_scope": "keras.utils",
    "serialize_keras_object": "keras.saving",
    "deserialize_keras_object": "keras.saving",
}
# Keras 3.15's public packages (tests/migrate/test_imports.py checks the list
# against the installed Keras).
KERAS3_MODULES = frozenset(
    """
keras keras.activations keras.applications keras.applications.convnext
keras.applications.densenet keras.applications.efficientnet
keras.applications.efficientnet_v2 keras.applications.imagenet_utils
keras.applications.inception_resnet_v2 keras.applications.inception_v3
keras.applications.mobilenet keras.applications.mobilenet_v2
keras.applications.mobilenet_v3 keras.applications.nasnet keras.applications.resnet
keras.applications.resnet50 keras.applications.resnet_v2 keras.applications.vgg16
keras.applications.vgg19 keras.applications.xception keras.backend keras.callbacks
keras.config keras.constraints keras.datasets keras.datasets.boston_housing
keras.datasets.california_housing keras.datasets.cifar10 keras.datasets.cifar100
keras.datasets.fashion_mnist keras.datasets.imdb keras.datasets.mnist
keras.datasets.reuters keras.distillation keras.distribution keras.dtype_policies
keras.export keras.initializers keras.layers keras.legacy keras.legacy.saving
keras.losses keras.metrics keras.mixed_precision keras.models keras.ops
keras.ops.image keras.ops.linalg keras.ops.nn keras.ops.numpy keras.optimizers
keras.optimizers.legacy keras.optimizers.schedules keras.preprocessing
keras.preprocessing.image keras.preprocessing.sequence keras.quantizers
keras.random keras.regularizers keras.saving keras.tree keras.utils
keras.utils.bounding_boxes keras.utils.legacy keras.visualization keras.wrappers
""".split()
)
# TensorFlow's own copies of Keras 2, by the path scripts import them from.
TF_KERAS_PATHS = (
    "tensorflow._api.v1.keras",
    "tensorflow._api.v2.keras",
    "tensorflow.compat.v1.keras",
    "tensorflow.compat.v2.keras",
    "tensorflow.python.keras",
)


@functools.lru_cache(maxsize=4096)
def keras3_module(module: str | None) -> str | None:
    """The Keras 3 module that holds a Keras 2 module's names, else None.

    `keras.layers.convolutional` (any spelling: `tf.keras`, `tensorflow.python.keras`)
    -> `keras.layers`; TensorFlow's copy of a module Keras 3 still has
    (`tensorflow.python.keras.layers`) -> that module. None for a module
    that did not move (`keras.layers`, `tensorflow.keras.layers`).
    """
    canonical = syntax.canonical_name(module) or ""
    if canonical in MOVED_MODULES:
        return MOVED_MODULES[canonical]
    if (module or "").startswith(TF_KERAS_PATHS) and canonical in KERAS3_MODULES:
        return canonical
    return None


@functools.lru_cache(maxsize=4096)
def keras3_name(qualified: str | None) -> str | None:
    """A name of a moved Keras 2 module as Keras 3 spells it, else None.

    Where the imports rule puts the name: `keras.layers.embeddings.Embedding`
    -> `keras.layers.Embedding`, `keras.engine.training.Model.fit` ->
    `keras.models.Model.fit` (`NAME_HOMES`), `keras.objectives.mse` ->
    `keras.losses.mse`, `keras.utils.conv_utils.normalize_tuple` ->
    `parallel_keras.compat.conv_utils.normalize_tuple`. None for a name of a
    module that did not move, and for a moved module itself
    (`keras.engine.topology`): its uses are names of it.
    """
    if not qualified or keras3_module(qualified) is not None:
        return None
    parts = qualified.split(".")
    for end in range(len(parts) - 1, 0, -1):
        target = keras3_module(".".join(parts[:end]))
        if target is not None:
            return ".".join([NAME_HOMES.get(parts[end], target), *parts[end:]])
    return None
