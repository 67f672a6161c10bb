# SPDX-License-Identifier: Apache-2.0
"""Installs what a legacy script needs once the process has imported Keras.

A legacy Keras 2 script changed by one import (`import parallel_keras`)
never calls parallel_keras other than `multi_gpu_model`, yet needs three
changes to Keras (see `parallel_keras.device_placement`,
`parallel_keras.data_parallel.wrapper_classes` and, for the list of
everything installed and when, `parallel_keras._internals.interceptions`):

* the `tf.device` scopes open while a functional model is built must be
  recorded as the model is built (Keras 3 drops them);
* `keras.models.load_model` must give a saved placement back;
* Keras 2's `ModelMGPU(Model)` wrapper class must be recognized as it is
  defined (`keras.Model.__init_subclass__`), so that `multi_gpu_model`
  called from its `__init__` can adopt the instance.

Installing them on `import parallel_keras` would import TensorFlow and Keras
(seconds, hundreds of MB) in processes that never need them:
`parallel-keras --help`, `parallel-keras migrate`, the launcher. So
`import parallel_keras` only registers a small import finder (this module
imports neither). When the process finishes importing `keras` (directly,
through `tf.keras`, or through any parallel_keras API), the finder imports
`parallel_keras.data_parallel.wrapper_classes` and
`parallel_keras.device_placement`, which install those three. If Keras was
imported before parallel_keras, they are installed at once (and wrapper
classes already defined are recognized then). Everything else
parallel_keras changes in Keras waits for the feature that needs it.

If a Keras upgrade moved what they patch, installing fails: the error is
reported as a `RuntimeWarning` when Keras is imported (raising there would
break `import keras` itself) and raised again, as a `RuntimeError`, by the
first parallel_keras API that needs placement.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings

# Modules whose end of import may complete the picture. TensorFlow imports
# parts of Keras while it initialises, so Keras can finish first; the hooks
# use `parallel_keras._internals`, which may be what imports Keras. The hooks
# are installed once all three that were imported are fully imported.
_WATCHED = ("keras", "tensorflow", "parallel_keras._internals")
_lock = threading.RLock()
_state = {"installed": False, "installing": False}
# Watched modules whose import this finder saw start and not yet end. A
# module already in `sys.modules` when the finder is registered counts as
# imported: `import parallel_keras` runs before any of its submodules, and
# neither Keras nor TensorFlow imports parallel_keras, so it cannot be
# registered in the middle of one of their imports. (No read of CPython's
# private `ModuleSpec._initializing` is needed.)
_importing: set[str] = set()


def _keras_ready() -> bool:
    return "keras" in sys.modules and not _importing


def install() -> None:
    """Installs the import-time hooks now (imports TensorFlow and Keras).

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
            # First: it works on every Keras in the tested range, while
            # device placement refuses a Keras below 3.11 (see below).
            importlib.import_module("parallel_keras.data_parallel.wrapper_classes")
            importlib.import_module("parallel_keras.device_placement")
        finally:
            _state["installing"] = False
        _state["installed"] = True


def _install_after_import() -> None:
    if not _keras_ready():
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
        try:
            return self._loader.create_module(spec)
        except BaseException:
            _importing.discard(spec.name)  # The import failed: no end to wait for.
            raise

    def exec_module(self, module):
        # The module's own spec must point at the real loader (resources,
        # reloads); only this one execution goes through the wrapper.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        try:
            self._loader.exec_module(module)
        finally:
            _importing.discard(module.__name__)
        _install_after_import()

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
        _importing.add(fullname)
        return spec


def install_when_keras_is_imported() -> None:
    """Installs the hooks now if Keras is imported, else when it will be."""
    if _keras_ready():
        _install_after_import()
        return
    if not any(isinstance(finder, _KerasImportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KerasImportFinder())
