# SPDX-License-Identifier: Apache-2.0
"""The tested TensorFlow/Keras range, and what an environment outside it gets.

The range and the environment-variable rules are in the TensorFlow-free
`parallel_keras._environment`; this module adds the installed versions.

parallel_keras is tested (`nox -s core`, noxfile.py) on TensorFlow 2.16 to
2.21 with Keras 3.5 to 3.15, Keras on its TensorFlow backend; that is also
what `pyproject.toml` declares. On import of `parallel_keras._internals`
(the first use of any API that runs TensorFlow), `check_environment`:

- raises `UnsupportedEnvironment` for what cannot work: a TensorFlow or
  Keras below the floor (a Keras 2), `tf.keras` switched to Keras 2
  (`TF_USE_LEGACY_KERAS`), Keras on another backend (`KERAS_BACKEND`). It
  runs before anything is patched, so after the error Keras and the user's
  models behave as without parallel_keras;
- logs one absl warning for a TensorFlow or Keras newer than tested: it may
  work, and the warning names the range and how to get into it.

Each message states the rule, what was found and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from absl import logging

from parallel_keras._environment import (
    CHECKED_VERSIONS,  # noqa: F401  (re-exported)
    EXCLUDED,
    TESTED_RANGE,
    UnsupportedEnvironment,
    check_environment_variables,
    tested_range_sentence,
    tested_requirements,
)

_warned = False


def _major_minor(version: str) -> tuple[int, int]:
    numbers = [int(number) for number in re.findall(r"\d+", version)[:2]] + [0, 0]
    return numbers[0], numbers[1]


def version_problems(installed: Mapping[str, str]) -> list[str]:
    """`"name==version (below the tested floor)"` for each too-old package."""
    return [
        f"{name}=={installed[name]}"
        for name in sorted(TESTED_RANGE, reverse=True)
        if name in installed and _major_minor(installed[name]) < TESTED_RANGE[name][0]
    ]


def excluded_releases(installed: Mapping[str, str]) -> list[str]:
    """`"name==version, which <why>"` for each installed release the range excludes."""
    return [
        f"{name}=={installed[name]}, which {EXCLUDED[name][_major_minor(installed[name])]}"
        for name in sorted(EXCLUDED, reverse=True)
        if name in installed and _major_minor(installed[name]) in EXCLUDED[name]
    ]


def newer_than_tested(installed: Mapping[str, str]) -> list[str]:
    """`"name==version"` for each package newer than the newest tested."""
    return [
        f"{name}=={installed[name]}"
        for name in sorted(TESTED_RANGE, reverse=True)
        if name in installed and _major_minor(installed[name]) > TESTED_RANGE[name][1]
    ]


def installed_versions() -> dict[str, str]:
    """The installed `tensorflow.__version__` and `keras.__version__`."""
    import keras
    import tensorflow as tf

    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def check_environment(
    environ: Mapping[str, str] | None = None,
    installed: Mapping[str, str] | None = None,
) -> None:
    """Raises for an environment parallel_keras cannot run on; warns if newer.

    Args:
        environ: The environment variables. Defaults to None (`os.environ`).
        installed: Package name to version. Defaults to None (the installed
            TensorFlow and Keras).

    Raises:
        UnsupportedEnvironment: TF_USE_LEGACY_KERAS, a non-TensorFlow Keras
            backend, or a TensorFlow/Keras below the tested floor.
    """
    check_environment_variables(environ)
    if installed is None:
        import keras

        backend = keras.backend.backend()
        if backend != "tensorflow":  # Set in ~/.keras/keras.json.
            raise UnsupportedEnvironment(
                f"{tested_range_sentence()} Received: keras.backend.backend()="
                f'{backend!r} (from ~/.keras/keras.json). Set "backend": '
                '"tensorflow" there, or KERAS_BACKEND=tensorflow before Keras '
                "is imported."
            )
        installed = installed_versions()
    too_old = version_problems(installed)
    if too_old:
        raise UnsupportedEnvironment(
            f"{tested_range_sentence()} Received: {', '.join(too_old)}, below the "
            f"tested floor. Upgrade: pip install {tested_requirements()}"
        )
    excluded = excluded_releases(installed)
    if excluded:
        raise UnsupportedEnvironment(
            f"{tested_range_sentence()} Received: {'; '.join(excluded)}. "
            f"Install another release: pip install {tested_requirements()}"
        )
    warn_if_newer_than_tested(installed)


def warn_if_newer_than_tested(installed: Mapping[str, str] | None = None) -> bool:
    """Logs one warning per process for a TensorFlow/Keras newer than tested.

    Args:
        installed: Package name to version. Defaults to None (the installed
            TensorFlow and Keras).

    Returns:
        True if this call logged the warning.
    """
    global _warned
    if _warned:
        return False
    newer = newer_than_tested(installed_versions() if installed is None else installed)
    if not newer:
        return False
    _warned = True
    logging.warning(
        "%s Received: %s, newer than tested; parallel_keras relies on private "
        "TensorFlow/Keras behaviour that a new release may change. If training "
        "or loading fails, install the tested range: pip install %s",
        tested_range_sentence(),
        ", ".join(newer),
        tested_requirements(),
    )
    return True
