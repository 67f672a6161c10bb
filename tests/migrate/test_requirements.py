# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/requirements.py: packages TensorFlow does not install, in the report."""

from __future__ import annotations

import importlib.metadata

import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import requirements


@pytest.mark.parametrize(
    "source, packages",
    [
        ("import keras\ntb = keras.callbacks.TensorBoard('l')\n", ["tensorboard"]),
        ("from keras.utils import plot_model\nplot_model(m, 'm.png')\n", ["pydot"]),
        ("from keras.utils.vis_utils import plot_model\nplot_model(m, 'm.png')\n", ["pydot"]),
        ("import keras\ncb = keras.callbacks.CSVLogger('l.csv')\n", []),
    ],
)
def test_report_lists_packages_with_pip_command(source, packages):
    result = migrate.migrate_source(source, "script.py")
    assert result.report.requirements == packages
    text = migrate.format_report([result.report])
    assert ("pip install " + " ".join(packages) in text) == bool(packages)


def test_listed_packages_are_not_tensorflow_or_keras_dependencies():
    needed = set()
    for name in ("tensorflow", "keras"):
        for line in importlib.metadata.requires(name) or ():
            needed.add(
                line.split(";")[0]
                .split("[")[0]
                .split(">")[0]
                .split("<")[0]
                .split("=")[0]
                .split("!")[0]
                .strip()
                .lower()
                .replace("_", "-")
            )
    for packages in requirements.REQUIREMENTS.values():
        assert not set(packages) & needed
