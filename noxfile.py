# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow/Keras matrix: the core tests on every tested pair.

    nox -s core                      # every pair, one after the other
    nox -s "core(floor)"             # TF 2.16.2 / Keras 3.5.0
    nox -s "core(newest)"            # TF 2.21.0 / Keras 3.15.1
    nox -R -s "core(floor)"          # reuse the environment while iterating
    nox -s "core(newest)" -- -x -k saving   # extra pytest arguments

Each pair gets its own virtualenv (under `.nox/`, gitignored) with exactly
that TensorFlow and Keras, parallel_keras installed from this checkout (not
editable: the tests run against what a user installs) and only what the
core tests import. pip resolves the pins together with `setup.cfg`'s
`install_requires`, so a pair outside the declared range fails to install.

The pairs are the tested range of `setup.cfg` (README "Install"): its
floor, its newest, and one pair per Keras shape the internals distinguish.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["core"]

# (id, TensorFlow, Keras). Keras 3.5 is the oldest that TF 2.18 and 2.19
# accept; each Keras is one shape of the private touches in
# parallel_keras/_internals/ (their docstrings list the versions).
PAIRS = (
    ("floor", "2.16.2", "3.5.0"),
    ("tf2.17-keras3.5", "2.17.1", "3.5.0"),
    ("tf2.18-keras3.8", "2.18.1", "3.8.0"),
    ("tf2.19-keras3.10", "2.19.1", "3.10.0"),
    ("tf2.20-keras3.11", "2.20.0", "3.11.3"),
    ("newest", "2.21.0", "3.15.1"),
    ("tf2.16-keras3.15", "2.16.2", "3.15.1"),
)

# The core promises, on every pair: data parallelism (same weights as one
# device), saving and plain-Keras loading, checkpoints, stateful templates,
# mixed precision, BackupAndRestore resume, multi-worker launch, the
# version/environment checks, the canaries of every private touch, and every
# name `parallel-keras migrate` can write resolving on the pair.
CORE_TESTS = (
    "tests/test_multi_gpu_model.py",
    "tests/test_saving.py",
    "tests/test_callbacks.py",
    "tests/test_stateful.py",
    "tests/test_mixed_precision.py",
    "tests/test_multi_worker_backup.py",
    "tests/test_multi_worker_launched.py",
    "tests/test_versions.py",
    "tests/test_boundary.py",
    "tests/internals",
    "tests/migrate/test_written_names.py",
)

# What the core tests import besides parallel_keras and its dependencies.
CORE_TEST_REQUIREMENTS = ("pytest>=7", "psutil>=5.9", "ruff>=0.5")


@nox.session(python="3.11")
@nox.parametrize(
    ("tensorflow", "keras"),
    [nox.param(tensorflow, keras, id=pair_id) for pair_id, tensorflow, keras in PAIRS],
)
def core(session: nox.Session, tensorflow: str, keras: str) -> None:
    """The core tests with one TensorFlow/Keras pair."""
    # tf_keras in lockstep with TensorFlow (the `keras2` extra): migrate writes
    # parallel_keras.compat names that read Keras 2's preprocessing from it.
    tf_keras = "tf_keras~=" + ".".join(tensorflow.split(".")[:2]) + ".0"
    session.install(
        f"tensorflow=={tensorflow}", f"keras=={keras}", tf_keras, ".", *CORE_TEST_REQUIREMENTS
    )
    # Fail before testing if pip (or a cached environment) holds another pair.
    session.run(
        "python",
        "-c",
        "import keras, tensorflow as tf, sys; "
        f"sys.exit(0 if (tf.__version__, keras.__version__) == ({tensorflow!r}, {keras!r}) "
        "else f'installed tf {tf.__version__} keras {keras.__version__}')",
        env={"TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        *CORE_TESTS,
        *session.posargs,
        env={"TF_CPP_MIN_LOG_LEVEL": "2"},
    )
