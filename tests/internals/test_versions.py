# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.versions`: the tested range, the
installed versions read from TensorFlow and Keras, and which fall outside.
(tests/test_versions.py runs the environments outside it in fresh processes.)"""

import keras
import pytest
import tensorflow as tf

from parallel_keras import _internals
from parallel_keras._internals import versions

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess


def test_the_installed_versions_are_tensorflow_and_keras_own():
    assert versions.installed_versions() == {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


def test_the_installed_pair_is_inside_the_tested_range():
    installed = versions.installed_versions()
    assert versions.version_problems(installed) == []
    assert versions.newer_than_tested(installed) == []
    _internals.check_environment(environ={}, installed=installed)  # No error.


def test_below_and_above_the_range_by_major_minor():
    assert versions.version_problems({"tensorflow": "2.16.0", "keras": "3.5.0"}) == []
    assert versions.version_problems({"tensorflow": "2.15.1", "keras": "3.4.9"}) == [
        "tensorflow==2.15.1",
        "keras==3.4.9",
    ]
    assert versions.version_problems({"tensorflow": "2.21.0", "keras": "2.15.0"}) == [
        "keras==2.15.0"
    ]
    assert versions.newer_than_tested({"tensorflow": "2.21.9", "keras": "3.15.7"}) == []
    assert versions.newer_than_tested({"tensorflow": "2.22.0rc0", "keras": "4.0.0"}) == [
        "tensorflow==2.22.0rc0",
        "keras==4.0.0",
    ]


def test_the_pip_command_spells_the_range():
    assert versions.tested_requirements() == "'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16,!=3.7.*'"


def test_an_excluded_release_inside_the_range_is_refused_with_why_and_the_fix():
    assert versions.excluded_releases({"tensorflow": "2.18.1", "keras": "3.8.0"}) == []
    with pytest.raises(versions.UnsupportedEnvironment) as raised:
        versions.check_environment(environ={}, installed={"tensorflow": "2.18.1", "keras": "3.7.0"})
    message = str(raised.value)
    for part in (
        "except Keras 3.7",
        "Received: keras==3.7.0, which creates every weight with aggregation MEAN",
        "keras-team/keras#20700",
        "pip install 'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16,!=3.7.*'",
    ):
        assert part in message, message


def test_every_keras_pip_hint_is_built_from_the_tested_range():
    from parallel_keras import _environment

    assert _environment.keras_requirement() == "'keras>=3.5,<3.16,!=3.7.*'"
    assert _environment.keras_requirement((3, 11)) == "'keras>=3.11,<3.16'"
    # A raised floor on a refused release moves to the next one.
    assert _environment.keras_requirement((3, 7)) == "'keras>=3.8,<3.16'"
    assert _environment.keras_requirement((3, 1)) == _environment.keras_requirement()
