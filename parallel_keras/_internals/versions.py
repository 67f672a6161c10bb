"""The tested TensorFlow/Keras range, and what an environment outside it gets.

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

from collections.abc import Mapping
import os
import re

from absl import logging

# The tested range, inclusive, by major.minor: keep in step with
# `pyproject.toml` `dependencies` and noxfile.py PAIRS (tests/test_versions.py
# checks both).
TESTED_RANGE = {"tensorflow": ((2, 16), (2, 21)), "keras": ((3, 5), (3, 15))}
# The newest tested pair: what the private touches were last checked on.
CHECKED_VERSIONS = {"tensorflow": "2.21.0", "keras": "3.15.1"}

_LEGACY_KERAS_VALUES = ("1", "true", "True")  # What TensorFlow's keras loader accepts.

_warned = False


class UnsupportedEnvironment(RuntimeError):
    """TensorFlow/Keras that parallel_keras cannot run on."""


def _major_minor(version: str) -> tuple[int, int]:
    numbers = re.findall(r"\d+", version)[:2]
    return tuple(int(number) for number in numbers) + (0,) * (2 - len(numbers))


def _range_text(name: str) -> str:
    (low_major, low_minor), (high_major, high_minor) = TESTED_RANGE[name]
    return f"{name}>={low_major}.{low_minor},<{high_major}.{high_minor + 1}"


def tested_requirements() -> str:
    """`'tensorflow>=2.16,<2.22' 'keras>=3.5,<3.16'`: pip's spelling of the range."""
    return " ".join(f"'{_range_text(name)}'" for name in sorted(TESTED_RANGE, reverse=True))


def _tested_range_sentence() -> str:
    return (
        "parallel_keras is tested on TensorFlow 2.16 to 2.21 with Keras 3.5 to 3.15 "
        "(Keras 3 on its TensorFlow backend)."
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


def version_problems(installed: Mapping[str, str]) -> list[str]:
    """`"name==version (below the tested floor)"` for each too-old package."""
    return [
        f"{name}=={installed[name]}"
        for name in sorted(TESTED_RANGE, reverse=True)
        if name in installed and _major_minor(installed[name]) < TESTED_RANGE[name][0]
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
    import keras  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

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
    problems = environment_problems(os.environ if environ is None else environ)
    if problems:
        raise UnsupportedEnvironment(" ".join([_tested_range_sentence(), *problems]))
    if installed is None:
        import keras  # pylint: disable=g-import-not-at-top

        backend = keras.backend.backend()
        if backend != "tensorflow":  # Set in ~/.keras/keras.json.
            raise UnsupportedEnvironment(
                f"{_tested_range_sentence()} Received: keras.backend.backend()="
                f"{backend!r} (from ~/.keras/keras.json). Set \"backend\": "
                "\"tensorflow\" there, or KERAS_BACKEND=tensorflow before Keras "
                "is imported."
            )
        installed = installed_versions()
    too_old = version_problems(installed)
    if too_old:
        raise UnsupportedEnvironment(
            f"{_tested_range_sentence()} Received: {', '.join(too_old)}, below the "
            f"tested floor. Upgrade: pip install {tested_requirements()}"
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
        _tested_range_sentence(), ", ".join(newer), tested_requirements(),
    )
    return True
