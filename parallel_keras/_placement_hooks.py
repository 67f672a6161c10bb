# SPDX-License-Identifier: Apache-2.0
"""Installs the device-placement hooks when Keras is imported, not before.

`keras.models.load_model` restores a saved placement only if parallel_keras's
hooks (see `parallel_keras/_internals/placement.py`) are in place
before the file is loaded. Installing them on `import parallel_keras` would
import TensorFlow and Keras (seconds, hundreds of MB) in processes that never
need them: `parallel-keras --help`, `parallel-keras migrate`, the launcher.

So `import parallel_keras` only registers a small import finder. When the
process finishes importing `keras` (directly, through `tf.keras`, or through
any parallel_keras API), the finder imports
`parallel_keras.device_placement`, which installs the hooks. If Keras was
imported before parallel_keras, they are installed at once. Either way a
model loaded afterwards gets its placement back.

The same hooks make a plain `with tf.device(...)` scope, open while a
functional model's layer calls are made, place those calls as
`parallel_keras.device` does (Keras 3 alone drops it): the one change
importing parallel_keras makes to a script that never calls it, besides
restoring saved placements (see `device_placement/scope.py`).

Chosen over "install at the first parallel_keras API call" because a script
may import parallel_keras and then call only `keras.models.load_model`: no
parallel_keras API runs, yet the placement must come back.

If a Keras upgrade moved what the hooks patch, installing fails: the error is
reported as a `RuntimeWarning` when Keras is imported (raising there would
break `import keras` itself) and raised again, as a `RuntimeError`, by the
first parallel_keras API that needs the hooks.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings

# Modules whose end of import may complete the picture. TensorFlow imports
# parts of Keras while it initialises, so Keras can finish first; the hooks
# use `parallel_keras._internals`, which may be what imports Keras. The hooks
# are installed once all three are fully imported (this watch keeps the
# arrows pointing down: `_internals` knows nothing of the hooks).
_WATCHED = ("keras", "tensorflow", "parallel_keras._internals")
_lock = threading.RLock()
_state = {"installed": False, "installing": False}


def _initializing(name: str, finished: str | None = None) -> bool:
    if name == finished:  # Its loader returned; importlib clears the flag next.
        return False
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _keras_ready(finished: str | None = None) -> bool:
    # The hooks use `parallel_keras._internals`: when importing it is what
    # imports Keras, they wait until it has finished (its end of import is
    # watched too).
    return (
        "keras" in sys.modules
        and not _initializing("keras", finished)
        and not _initializing("tensorflow", finished)
        and not _initializing("parallel_keras._internals", finished)
    )


def install() -> None:
    """Installs the placement hooks now (imports TensorFlow and Keras).

    Raises:
        RuntimeError: If this Keras version moved what the hooks patch.
    """
    with _lock:
        if _state["installed"] or _state["installing"]:
            return
        _state["installing"] = True
        try:
            # The same moment suits PARALLEL_KERAS_SIMULATE_DEVICES: Keras is
            # imported, TensorFlow has not yet used its devices.
            from parallel_keras import _simulate_env

            _simulate_env.apply()
            importlib.import_module("parallel_keras.device_placement")
        finally:
            _state["installing"] = False
        _state["installed"] = True


def installed() -> bool:
    """Whether the placement hooks are in place in this process."""
    return _state["installed"]


def _install_after_import(finished: str | None = None) -> None:
    if not _keras_ready(finished):
        return
    try:
        install()
    # Any failure of Keras internals to take the hooks is reported, and
    # raised again at first use; an import must not fail because of it.
    except Exception as error:  # noqa: BLE001
        if type(error).__name__ == "PlacementNeedsNewerKeras":
            # A Keras below placement's floor, inside the tested range:
            # everything else works, and placement's own API raises this
            # error (with the pip command) at first use. No warning on every
            # `import keras` for a feature the script may never use.
            return
        if type(error).__name__ == "UnsupportedEnvironment":
            # Its message has the rule, what was found and the fix.
            warnings.warn(
                f"parallel_keras does nothing in this environment: {error}",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        warnings.warn(
            "parallel_keras could not install its device-placement hooks into "
            f"this Keras, so models loaded now lose their saved placement. "
            f"Received: {type(error).__name__}: {error} Install the Keras "
            "version parallel_keras was checked on (see "
            "parallel_keras._internals.CHECKED_VERSIONS) or upgrade "
            "parallel_keras.",
            RuntimeWarning,
            stacklevel=2,
        )


# Plain classes, not importlib.abc subclasses: importing importlib.abc (and
# importlib.util) would add ~5 ms to every `import parallel_keras`.
class _LoaderThenInstall:
    """Runs the real loader, then installs the hooks if Keras is ready."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # The module's own spec must point at the real loader (resources,
        # reloads); only this one execution goes through the wrapper.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _install_after_import(finished=module.__name__)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _KerasImportFinder:
    """Wraps the loader of the watched modules; finds nothing itself."""

    def __init__(self):
        self._searching = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _WATCHED or getattr(self._searching, "active", False):
            return None
        import importlib.util

        self._searching.active = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching.active = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        # Duck-typed Loader (see _LoaderThenInstall): importlib.abc costs import time.
        spec.loader = _LoaderThenInstall(spec.loader)  # type: ignore[assignment]
        return spec


def install_when_keras_is_imported() -> None:
    """Installs the hooks now if Keras is imported, else when it will be."""
    if _keras_ready():
        _install_after_import()
        return
    if not any(isinstance(finder, _KerasImportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KerasImportFinder())
