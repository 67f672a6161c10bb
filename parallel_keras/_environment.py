# SPDX-License-Identifier: Apache-2.0
"""The tested TensorFlow/Keras range and the environment variables that rule
parallel_keras out; TensorFlow-free, so it runs before Keras is imported.

`parallel_keras.__getattr__` calls `check_environment_variables` before the
first export loads (a Keras on JAX would fail inside Keras's own import
first); `parallel_keras._internals.versions` checks the installed versions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# The tested range, inclusive, by major.minor: keep in step with
# `setup.cfg` `install_requires` and noxfile.py PAIRS (tests/test_versions.py
# checks both).
TESTED_RANGE = {"tensorflow": ((2, 16), (2, 21)), "keras": ((3, 5), (3, 15))}
# Releases inside the range that parallel_keras refuses, with why. Keras 3.7
# passes every weight's default aggregation "mean" on to tf.Variable: under
# tf.distribute an integer variable (Dropout's seed state, a counter) then
# fails at creation, and every replica-side weight update becomes a merge
# call (keras-team/keras#20700, #20568; Keras 3.8 made "none" the default).
EXCLUDED = {
    "keras": {
        (3, 7): "creates every weight with aggregation MEAN under tf.distribute "
        "(keras-team/keras#20700: integer variables such as Dropout's seed fail "
        "at creation; fixed in Keras 3.8)",
    },
}
# The newest tested pair: what the private touches were last checked on.
CHECKED_VERSIONS = {"tensorflow": "2.21.0", "keras": "3.15.1"}

_LEGACY_KERAS_VALUES = ("1", "true", "True")  # What TensorFlow's keras loader accepts.


class UnsupportedEnvironment(RuntimeError):
    """TensorFlow/Keras that parallel_keras cannot run on."""


def _range_text(name: str, minimum: tuple[int, int] | None = None) -> str:
    low, (high_major, high_minor) = TESTED_RANGE[name]
    low_major, low_minor = max(low, minimum) if minimum else low
    while (low_major, low_minor) in EXCLUDED.get(name, {}):  # A refused floor: the next one.
        low_minor += 1
    excluded = "".join(
        f",!={major}.{minor}.*"
        for major, minor in sorted(EXCLUDED.get(name, {}))
        if (major, minor) >= (low_major, low_minor)
    )
    return f"{name}>={low_major}.{low_minor},<{high_major}.{high_minor + 1}{excluded}"


def keras_requirement(minimum: tuple[int, int] | None = None) -> str:
    """`'keras>=3.5,<3.16,!=3.7.*'`, the floor raised to `minimum` when given.

    Every pip hint about Keras is built here, so it moves with the tested
    range (`TESTED_RANGE`) instead of going stale in an error message.
    """
    return f"'{_range_text('keras', minimum)}'"


def tested_requirements() -> str:
    """`'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16,!=3.7.*'`: pip's spelling of the range."""
    return " ".join(f"'{_range_text(name)}'" for name in sorted(TESTED_RANGE, reverse=True))


def tested_range_sentence() -> str:
    tensorflow, keras = TESTED_RANGE["tensorflow"], TESTED_RANGE["keras"]
    excluded = ", ".join(f"{major}.{minor}" for major, minor in sorted(EXCLUDED["keras"]))
    return (
        f"parallel_keras is tested on TensorFlow {tensorflow[0][0]}.{tensorflow[0][1]} to "
        f"{tensorflow[1][0]}.{tensorflow[1][1]} with Keras {keras[0][0]}.{keras[0][1]} to "
        f"{keras[1][0]}.{keras[1][1]} except Keras {excluded} (Keras 3 on its TensorFlow "
        "backend)."
    )


def environment_problems(environ: Mapping[str, str]) -> list[str]:
    """What, before Keras is imported, rules this process out (with the fix)."""
    problems = []
    legacy = environ.get("TF_USE_LEGACY_KERAS")
    if legacy in _LEGACY_KERAS_VALUES:
        problems.append(
            f"Received: TF_USE_LEGACY_KERAS={legacy!r}, which makes tf.keras the "
            "Keras 2 package tf_keras. parallel_keras runs Keras 2 scripts on "
            "Keras 3: unset TF_USE_LEGACY_KERAS (and run `parallel-keras migrate` "
            "on scripts that import tf_keras)."
        )
    backend = environ.get("KERAS_BACKEND")
    if backend and backend != "tensorflow":
        problems.append(
            f"Received: KERAS_BACKEND={backend!r}. parallel_keras distributes with "
            "tf.distribute: unset KERAS_BACKEND or set KERAS_BACKEND=tensorflow "
            "before Keras is imported."
        )
    return problems


def check_environment_variables(environ: Mapping[str, str] | None = None) -> None:
    """Raises `UnsupportedEnvironment` for TF_USE_LEGACY_KERAS / KERAS_BACKEND.

    Args:
        environ: The environment variables. Defaults to None (`os.environ`).
    """
    problems = environment_problems(os.environ if environ is None else environ)
    if problems:
        raise UnsupportedEnvironment(" ".join([tested_range_sentence(), *problems]))
