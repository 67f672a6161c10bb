# SPDX-License-Identifier: Apache-2.0
"""Atomic saves: write beside the target, then rename into place.

A process killed in the middle of `model.save` leaves a half-written file;
when that file is the only checkpoint, the run is lost. Here every file is
written to a temporary sibling (same folder, so the same filesystem) and
moved over the target with `os.replace`, which POSIX and Windows perform
atomically: at every moment the target is either the previous complete file
or the new complete file.

Before anything is written the user's path is checked (folder present, a
folder, writable; target not read-only), so errors name that path and never
the hidden temporary one. Temporary names carry the writer's PID and a tag
of its host; a save removes the temporaries that dead processes of this host
left beside its target (a kill mid-save), never a live process's.

A path that is a symbolic link is written through: the temporary goes
beside the link's target and replaces the target, so the link stays a link
(as a plain Keras save leaves it). HDF5 files are built in memory and only
their bytes are written, by Python (see `_internals.keras_weights_image`):
HDF5 writing to a full disk or past the file-size limit fails once and then
crashes the process at the next save. A full disk or file-size limit is an
`OSError` naming the user's path, the rule and the fix; the previous file
is unchanged and the next save in the same process works.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import secrets
from collections.abc import Callable, Iterator

import h5py
import keras
from absl import logging

from parallel_keras import _files, _internals
from parallel_keras.cluster import writes
from parallel_keras.saving import paths
from parallel_keras.saving.paths import check_output_path, remove_stale_temporaries, temporary_path


class SavesItsTemplate:
    """Marks a model whose files are its `template`'s (the parallel model).

    A type, not an attribute check: a user's model that happens to have a
    `template` attribute is saved as itself.
    """

    template: keras.Model


def saving_target(model: keras.Model) -> keras.Model:
    """The model whose file is written: a parallel model's template."""
    return model.template if isinstance(model, SavesItsTemplate) else model


@contextlib.contextmanager
def atomic_path(filepath: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path; on success moves it over `filepath`.

    On any error the temporary file is removed and `filepath` is untouched.

    Args:
        filepath: The final path.

    Yields:
        The temporary path to write.
    """
    user_path = os.fspath(filepath)
    # Through a link, replace what it points at: renaming onto the link
    # itself would turn it into a regular file and leave the target stale.
    final = paths.resolve_link(user_path)
    remove_stale_temporaries(final)
    temporary = temporary_path(final)
    try:
        # The new file takes the old one's permissions, as an in-place write
        # would; the rename is the atomic step.
        with _files.replacing(final, temporary=temporary) as path:
            yield path
    except Exception as error:
        renamed = _naming_user_path(error, temporary, user_path, final)
        if renamed is None:
            raise
        raise renamed from error


def _naming_user_path(error: BaseException, temporary: str, user_path: str, final: str):
    """The same error with the user's path where it named the temporary one."""
    if not isinstance(error, Exception):
        return None
    hidden = os.path.basename(temporary)
    if isinstance(error, OSError) and error.errno in _NO_ROOM:
        return _no_room(error, user_path, final)
    if isinstance(error, OSError):
        named = [str(n) for n in (error.filename, error.filename2) if n is not None]
        if not any(hidden in n for n in named) and hidden not in str(error):
            return None
        return type(error)(
            error.errno,
            f"{error.strerror or error} while writing {user_path!r}, which is "
            "unchanged. Check the folder's free space and permissions, or "
            "pass another path.",
            user_path,
        )
    message = str(error)
    if hidden not in message:
        return None
    try:
        return type(error)(message.replace(temporary, user_path).replace(hidden, user_path))
    # Any exception class may refuse one message argument, in any way; the
    # original error is then raised unchanged.
    except Exception:  # noqa: BLE001
        return None


# A full disk, a full quota, a file over the process's file-size limit.
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _no_room(error: OSError, user_path: str, final: str) -> OSError:
    """The rule, the user's path and the fix for a write that found no room."""
    folder = os.path.dirname(os.path.abspath(final))
    shown = f"filepath={user_path!r}"
    if final != os.path.abspath(user_path) and final != user_path:
        shown += f" (a link to {final!r})"
    if error.errno == errno.EFBIG:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        limit_text = "unlimited" if limit == resource.RLIM_INFINITY else f"{limit} bytes"
        message = (
            "A saved file must fit within this process's file-size limit "
            f"(ulimit -f, RLIMIT_FSIZE: {limit_text}). Received: {shown}, "
            "whose new content is larger; the file is unchanged. Raise the "
            "limit (ulimit -f unlimited) before starting Python, or save "
            "less (save_weights instead of save, include_optimizer=False)."
        )
    else:
        try:
            stats = os.statvfs(folder)
            free = f"{stats.f_bavail * stats.f_frsize} bytes free"
        except OSError:
            free = "free space unknown"
        message = (
            "A save writes the whole new file beside the old one before "
            f"replacing it, and the disk holding {folder!r} is full "
            f"({error.strerror}; {free}). Received: {shown}, which is "
            "unchanged. Free space on that disk (old checkpoints, caches), "
            "or pass a path on another disk; the next save will work once "
            "there is room."
        )
    return OSError(error.errno, message)


def _write_bytes(path: str, data: bytes) -> None:
    # Python's own I/O: a full disk or the file-size limit is an OSError and
    # nothing else (Python ignores SIGXFSZ, so the write returns EFBIG).
    with open(path, "xb") as file:
        file.write(data)


def _hdf5_image(write: Callable[[h5py.File], None]) -> bytes:
    """The bytes of an HDF5 file that `write` fills, built in memory only."""
    # backing_store=False: HDF5 never opens a file on disk, so no failed
    # disk write can leave it in the state that crashes the next save.
    name = f"parallel-keras-in-memory-{os.getpid()}-{secrets.token_hex(4)}.h5"
    file = h5py.File(name, "w", driver="core", backing_store=False)
    try:
        write(file)
        file.flush()
        return file.id.get_file_image()
    finally:
        file.close()


def atomic_write(filepath: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Calls `write(temporary_path)` and renames the result onto `filepath`."""
    with atomic_path(filepath) as temporary:
        write(temporary)


def save_model(
    model: keras.Model, filepath: str | os.PathLike, overwrite: bool = True, **kwargs
) -> None:
    """`model.save(filepath)`, atomically, through a parallel model's template.

    In multi-worker training only the chief writes `filepath`; the other
    workers write into their temporary folders (`multi_worker.write_path`).

    Args:
        model: A Keras model or a `ParallelModel` (its template is saved).
        filepath: A `.keras`, `.h5` or `.hdf5` path.
        overwrite: Replace an existing file without asking. With False and
            an existing file, Keras asks on the terminal as usual (that
            write is not atomic); without a terminal, raises. Defaults to
            True.
        **kwargs: Passed to `keras.Model.save`.

    Raises:
        ValueError: The suffix is not `.keras`/`.h5`/`.hdf5`, the folder is
            missing (a `.keras` path: an HDF5 path's folder is created, as
            Keras's HDF5 writer does) or is a file, or the path is a folder.
        PermissionError: The file or its folder is read-only.
        FileExistsError: overwrite=False, the file exists, and there is no
            terminal to ask on.

    Example:

    >>> import keras, tempfile, os
    >>> from parallel_keras.saving import atomic
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> atomic.save_model(model, os.path.join(tempfile.mkdtemp(), "m.keras"))
    """
    target = saving_target(model)
    path = writes.write_path(filepath)
    legacy = path.endswith(paths.LEGACY_SUFFIXES)
    # Keras's HDF5 writer (Keras 3, tf.keras 2) creates a missing folder;
    # its `.keras` writer does not.
    check_output_path(path, paths.MODEL_SUFFIXES, what="save", create_folder=legacy)
    if not overwrite and os.path.exists(path):
        paths.refuse_prompt_without_terminal(path, "save")
        target.save(path, overwrite=False, **kwargs)
        return
    include_optimizer = kwargs.pop("include_optimizer", True) if legacy else True
    if legacy and not kwargs:
        image = _hdf5_image(
            lambda file: _internals.legacy_h5_model_to(file, target, include_optimizer)
        )
    with atomic_path(path) as temporary:
        if legacy and not kwargs:
            _write_bytes(temporary, image)
        else:
            # A `.keras` archive: Keras zips with Python's own I/O, and its
            # HDF5 member is built in memory.
            target.save(temporary, overwrite=True, **kwargs)
    logging.info("Saved model %s to %s", target.name, path)


def save_weights(
    model: keras.Model, filepath: str | os.PathLike, overwrite: bool = True, **kwargs
) -> None:
    """`model.save_weights(filepath)`, atomically, through the template.

    Besides Keras 3's `.weights.h5`, a `.h5`/`.hdf5` path (what Keras 2
    scripts pass) is written in the legacy layout Keras 3 still loads with
    `model.load_weights`.

    Args:
        model: A Keras model or a `ParallelModel` (its template is saved).
        filepath: A `.weights.h5`, `.h5` or `.hdf5` path.
        overwrite: As for `save_model`. Defaults to True.
        **kwargs: Passed to `keras.Model.save_weights`.

    Raises:
        ValueError, PermissionError, FileExistsError: As for `save_model`.
    """
    target = saving_target(model)
    path = writes.write_path(filepath)
    if kwargs.get("max_shard_size") is not None:
        # Sharded weights are several files; no single rename covers them.
        check_output_path(path, None, what="save_weights")
        target.save_weights(path, overwrite=overwrite, **kwargs)
        return
    check_output_path(path, paths.WEIGHTS_SUFFIXES, what="save_weights")
    legacy = path.endswith(paths.LEGACY_SUFFIXES) and not path.endswith(".weights.h5")
    if not overwrite and os.path.exists(path):
        if legacy:
            raise FileExistsError(
                "save_weights will not replace an existing file with "
                f"overwrite=False. Received: filepath={path!r}, which exists. "
                "Pass overwrite=True or another path."
            )
        paths.refuse_prompt_without_terminal(path, "save_weights")
        target.save_weights(path, overwrite=False, **kwargs)
        return
    if legacy:
        image = _hdf5_image(lambda file: _internals.save_legacy_h5_weights(file, target))
    elif not kwargs:
        image = _internals.keras_weights_image(target)
    with atomic_path(path) as temporary:
        if legacy or not kwargs:
            _write_bytes(temporary, image)
        else:
            target.save_weights(temporary, overwrite=True, **kwargs)
    logging.info("Saved weights of %s to %s", target.name, path)


def check_writable_folder(filepath: str | os.PathLike) -> str:
    """Makes sure files can be created where `filepath` points.

    `filepath` may hold format fields (`{epoch:02d}`); the folder checked is
    the part before the first field. Missing folders are created.

    Args:
        filepath: A file path, possibly with format fields.

    Returns:
        The folder that was checked.

    Raises:
        ValueError: If the folder cannot be created or written.
    """
    path = os.fspath(filepath)
    folder = os.path.dirname(path.split("{", 1)[0]) or "."
    blocker = None if os.path.isdir(folder) else paths.first_file_ancestor(folder)
    if blocker is not None:
        raise ValueError(
            "Checkpoints need a folder this process can write. Received: "
            f"filepath={path!r}, whose folder is not writable: {blocker!r} is "
            "a regular file, not a folder. Pass a filepath whose folders are "
            "folders, or move that file away."
        )
    if os.path.isdir(folder) and paths.read_only(folder):
        raise ValueError(
            "Checkpoints need a folder this process can write. Received: "
            f"filepath={path!r}, whose folder {folder!r} is read-only (not writable). Pass a "
            f"filepath in a writable folder, or chmod u+w {folder}."
        )
    probe = None
    try:
        os.makedirs(folder, exist_ok=True)
        probe = temporary_path(os.path.join(folder, "write-check"))
        with open(probe, "wb") as file:
            file.write(b"")
    except OSError as error:
        raise ValueError(
            "Checkpoints need a folder this process can write. Received: "
            f"filepath={path!r}, whose folder {folder!r} is not writable "
            f"({error.strerror or error}). Pass a filepath in a writable "
            "folder, or fix the folder's permissions."
        ) from error
    finally:
        if probe is not None:
            with contextlib.suppress(OSError):
                os.remove(probe)
    return folder
