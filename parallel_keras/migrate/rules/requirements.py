# SPDX-License-Identifier: Apache-2.0
"""Report: packages the migrated script needs that `pip install tensorflow` lacks.

TensorFlow 2.21 installs Keras 3 but no longer `tensorboard`, which
`keras.callbacks.TensorBoard` imports when training starts
(`TBNotInstalledError` mid-fit); `keras.utils.plot_model` needs `pydot`
(and Graphviz's `dot` program). Nothing is rewritten: the report lists the
packages with the pip command (`FileReport.requirements`).
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context

RULE = "requirements"

# Keras name -> the pip packages it imports that TensorFlow does not install
# (checked against `pip show tensorflow keras` of TF 2.21 / Keras 3.15).
REQUIREMENTS = {
    "keras.callbacks.TensorBoard": ("tensorboard",),
    "keras.utils.plot_model": ("pydot",),
    "keras.utils.model_to_dot": ("pydot",),
}


# What `parallel_keras.compat` takes from the tf_keras package (Keras 2's
# preprocessing), and how the report asks for it: the `keras2` extra pins
# tf_keras to the TensorFlow range parallel_keras supports.
TF_KERAS_NAMES = frozenset(
    {
        "ImageDataGenerator",
        "Iterator",
        "NumpyArrayIterator",
        "DirectoryIterator",
        "TimeseriesGenerator",
        "Tokenizer",
        "hashing_trick",
        "one_hot",
        "text_to_word_sequence",
        "tokenizer_from_json",
        "make_sampling_table",
        "skipgrams",
        "apply_affine_transform",
        "apply_brightness_shift",
        "apply_channel_shift",
        "random_brightness",
        "random_channel_shift",
        "random_rotation",
        "random_shear",
        "random_shift",
        "random_zoom",
    }
)
KERAS2_EXTRA = "'parallel-keras[keras2]'"


class RequirementsRule(context.Rule):
    """`keras.callbacks.TensorBoard(...)` -> the report says `pip install tensorboard`."""

    name = RULE

    def visit_Call(self, ctx, node):
        qualified = ctx.qualified_name(node.func) or ""
        # `keras.utils.vis_utils.plot_model`, `keras.callbacks.tensorboard_v1.TensorBoard`.
        for package_root in ("keras.utils.", "keras.callbacks."):
            if qualified.startswith(package_root):
                qualified = package_root + qualified.rpartition(".")[2]
        for package in REQUIREMENTS.get(qualified, ()):
            ctx.require_package(package)

    def visit_Name(self, ctx, node):
        self._tf_keras(ctx, node)

    def visit_Attribute(self, ctx, node):
        self._tf_keras(ctx, node)

    def _tf_keras(self, ctx, node):
        # `parallel_keras.compat.Tokenizer`, also imported by name or subclassed.
        last = node.value if isinstance(node, cst.Name) else node.attr.value
        if last not in TF_KERAS_NAMES:
            return
        qualified = ctx.qualified_name(node) or ""
        if qualified.rpartition(".")[0] == "parallel_keras.compat":
            ctx.require_package(KERAS2_EXTRA)


AUDIT = [
    (
        "parallel_keras.compat.<Keras 2 preprocessing>",
        "(kept)",
        f"needs `pip install {KERAS2_EXTRA}` (tf_keras of TensorFlow's version); listed "
        "in the report",
    ),
    *(
        (
            name,
            "(kept)",
            f"needs `pip install {' '.join(packages)}` (not installed with "
            "TensorFlow 2.21); listed in the report",
        )
        for name, packages in sorted(REQUIREMENTS.items())
    ),
]
