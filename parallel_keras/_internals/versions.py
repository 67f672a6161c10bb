"""The TensorFlow and Keras versions the internals were checked on.

Every module of this package relies on private TensorFlow/Keras behaviour
checked on exactly these versions. On import of `parallel_keras._internals`
(which only modules that already import TensorFlow do), `warn_if_versions_differ`
logs one absl warning when the installed major.minor versions differ, so an
upgrade that changes something shows up next to its cause.

Checked on TensorFlow 2.21.0 with Keras 3.15.1; `tests/internals/
test_versions.py` checks the warning.
"""

from __future__ import annotations

from collections.abc import Mapping

from absl import logging

CHECKED_VERSIONS = {"tensorflow": "2.21.0", "keras": "3.15.1"}

_warned = False


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split("+")[0].split(".")[:2])


def version_mismatches(
    installed: Mapping[str, str],
    checked: Mapping[str, str] = CHECKED_VERSIONS,
) -> list[str]:
    """`"name installed (checked X)"` for each package whose major.minor differs."""
    return [
        f"{name}=={installed[name]} (checked {checked[name]})"
        for name in sorted(checked)
        if name in installed and _major_minor(installed[name]) != _major_minor(checked[name])
    ]


def installed_versions() -> dict[str, str]:
    """The installed `tensorflow.__version__` and `keras.__version__`."""
    import keras  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def warn_if_versions_differ(installed: Mapping[str, str] | None = None) -> bool:
    """Logs one warning per process if the installed versions were not checked.

    Args:
        installed: Package name to version. Defaults to None (the installed
            TensorFlow and Keras).

    Returns:
        True if this call logged the warning.
    """
    global _warned
    if _warned:
        return False
    mismatches = version_mismatches(installed_versions() if installed is None else installed)
    if not mismatches:
        return False
    _warned = True
    logging.warning(
        "parallel_keras relies on private TensorFlow/Keras behaviour checked on "
        "tensorflow==%s, keras==%s. Received: %s. If training or loading "
        "fails, install the checked versions or a parallel_keras release that "
        "supports these; tests/internals shows what changed.",
        CHECKED_VERSIONS["tensorflow"], CHECKED_VERSIONS["keras"], ", ".join(mismatches),
    )
    return True
