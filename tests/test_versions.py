# SPDX-License-Identifier: Apache-2.0
"""Declared = tested, and what an environment outside the tested range gets.

The range lives in `parallel_keras/_environment.py`; `setup.cfg`
declares it and noxfile.py tests its pairs. Environments parallel_keras
cannot run on are refused at first use with the rule, what was found and the
fix, before anything is patched; each row runs in a fresh process.
"""

import ast
import configparser
import pathlib
import re
import textwrap

import keras
import pytest

from parallel_keras import _environment
from parallel_keras.testing import run_python

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]


def _major_minor(version: str) -> tuple[int, int]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _noxfile_pairs() -> list[tuple[str, str, str]]:
    tree = ast.parse((REPO / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "PAIRS"
        ]:
            return list(ast.literal_eval(node.value))
    raise AssertionError("noxfile.py has no PAIRS")


def test_setup_cfg_declares_exactly_the_tested_range():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    requirements = [
        line.strip()
        for line in config["options"]["install_requires"].splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    declared = {
        re.match(r"[\w-]+", requirement)[0]: requirement.replace(" ", "")
        for requirement in requirements
    }
    for requirement in _environment.tested_requirements().split():
        requirement = requirement.strip("'")
        name = re.match(r"[\w-]+", requirement)[0]
        assert declared[name] == requirement, (declared[name], requirement)


def test_the_matrix_tests_both_ends_of_the_range_and_nothing_outside():
    pairs = {pair_id: (tensorflow, keras) for pair_id, tensorflow, keras in _noxfile_pairs()}
    (tf_low, tf_high) = _environment.TESTED_RANGE["tensorflow"]
    (keras_low, keras_high) = _environment.TESTED_RANGE["keras"]
    assert tuple(map(_major_minor, pairs["floor"])) == (tf_low, keras_low)
    assert tuple(map(_major_minor, pairs["newest"])) == (tf_high, keras_high)
    for tensorflow_version, keras_version in pairs.values():
        assert tf_low <= _major_minor(tensorflow_version) <= tf_high, tensorflow_version
        assert keras_low <= _major_minor(keras_version) <= keras_high, keras_version
        assert _major_minor(keras_version) not in _environment.EXCLUDED["keras"], keras_version
    newest = {name: version for name, version in zip(("tensorflow", "keras"), pairs["newest"])}
    assert newest == _environment.CHECKED_VERSIONS


# What the user's process does after the error: Keras works, untouched.
_PLAIN_KERAS_STILL_WORKS = """
import keras, numpy as np
from keras.src.ops import node
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
print("PATCHED", hasattr(node.Node.__init__, "__wrapped__"))
"""


@pytest.mark.parametrize(
    "env, expected",
    [
        (
            {"KERAS_BACKEND": "jax"},
            ["Received: KERAS_BACKEND='jax'", "set KERAS_BACKEND=tensorflow"],
        ),
        (
            {"TF_USE_LEGACY_KERAS": "1"},
            ["Received: TF_USE_LEGACY_KERAS='1'", "tf_keras", "unset TF_USE_LEGACY_KERAS"],
        ),
    ],
    ids=["keras-on-jax", "legacy-tf-keras"],
)
def test_an_environment_that_is_not_keras_3_on_tensorflow_is_refused_at_first_use(env, expected):
    process = run_python(
        """
        import sys
        import parallel_keras
        try:
            parallel_keras.multi_gpu_model
        except RuntimeError as error:
            print("ERROR", type(error).__name__, error)
        print("KERAS_IMPORTED", "keras" in sys.modules)
        """,
        env=env,
    )
    error = next(line for line in process.stdout.splitlines() if line.startswith("ERROR"))
    assert error.startswith(
        "ERROR UnsupportedEnvironment parallel_keras is tested on "
        "TensorFlow 2.16 to 2.21 with Keras 3.5 to 3.15"
    ), error
    for part in expected:
        assert part in error, error
    # Refused before Keras was imported: nothing of Keras was touched.
    assert "KERAS_IMPORTED False" in process.stdout


@pytest.mark.parametrize(
    "version, why",
    [
        # Below the floor (3.3 crashed on private attributes).
        ("3.3.3", "Received: keras==3.3.3, below the tested floor"),
        # Inside the range but excluded: tf.distribute broken upstream.
        ("3.7.0", "Received: keras==3.7.0, which creates every weight with aggregation MEAN"),
    ],
)
def test_a_keras_outside_the_tested_range_is_refused_and_nothing_is_patched(version, why):
    # The real Keras with its version read as another release; a real one
    # of those is what the nox pairs leave out.
    process = run_python(
        textwrap.dedent(f"""
        import warnings
        import keras
        keras.__version__ = "{version}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import parallel_keras
        print("IMPORT_WARNING", [str(w.message)[:60] for w in caught])
        try:
            parallel_keras.multi_gpu_model
        except RuntimeError as error:
            print("ERROR", type(error).__name__, error)
        """)
        + _PLAIN_KERAS_STILL_WORKS,
    )
    error = next(line for line in process.stdout.splitlines() if line.startswith("ERROR"))
    for part in (
        "ERROR UnsupportedEnvironment",
        why,
        "pip install 'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16,!=3.7.*'",
    ):
        assert part in error, error
    assert "PATCHED False" in process.stdout, process.stdout


def test_a_keras_newer_than_tested_warns_once_with_the_range_and_works():
    process = run_python(
        textwrap.dedent("""
        import keras
        keras.__version__ = "3.99.0"
        import parallel_keras
        from parallel_keras import _internals
        print("AGAIN", _internals.versions.warn_if_newer_than_tested())
        """)
        + _PLAIN_KERAS_STILL_WORKS,
    )
    assert "AGAIN False" in process.stdout, process.stderr[-3000:]
    assert process.stderr.count("Received: keras==3.99.0, newer than tested") == 1, process.stderr[
        -3000:
    ]
    assert "pip install 'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16,!=3.7.*'" in process.stderr
    # Newer is not refused: the placement hooks go in where Keras has them.
    has_placement = _major_minor(keras.__version__) >= (3, 11)
    assert f"PATCHED {has_placement}" in process.stdout, process.stdout


def test_the_tested_versions_are_not_warned_about():
    process = run_python(
        """
        from parallel_keras import _internals
        print("VERSIONS", _internals.versions.installed_versions())
        """,
    )
    assert "newer than tested" not in process.stderr
    assert "below the tested floor" not in process.stderr
