# SPDX-License-Identifier: Apache-2.0
"""Report: packages the migrated script needs that `pip install tensorflow` lacks.

TensorFlow 2.21 installs Keras 3 but no longer `tensorboard`, which
`keras.callbacks.TensorBoard` imports when training starts
(`TBNotInstalledError` mid-fit); `keras.utils.plot_model` needs `pydot`
(and Graphviz's `dot` program). Nothing is rewritten: the report lists the
packages with the pip command (`FileReport.requirements`).
"""

from __future__ import annotations

from parallel_keras.migrate import context

RULE = "requirements"

# Keras name -> the pip packages it imports that TensorFlow does not install
# (checked against `pip show tensorflow keras` of TF 2.21 / Keras 3.15).
REQUIREMENTS = {
    "keras.callbacks.TensorBoard": ("tensorboard",),
    "keras.utils.plot_model": ("pydot",),
    "keras.utils.model_to_dot": ("pydot",),
}


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


AUDIT = [
    (
        name,
        "(kept)",
        f"needs `pip install {' '.join(packages)}` (not installed with "
        "TensorFlow 2.21); listed in the report",
    )
    for name, packages in sorted(REQUIREMENTS.items())
]
