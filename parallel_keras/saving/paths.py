# SPDX-License-Identifier: Apache-2.0
"""Output paths: checked before any work, and the temporaries beside them.

No TensorFlow or Keras here, so the CLI checks `-o` in milliseconds, before
it builds or loads anything. `atomic` writes through `temporary_path`; a
temporary's name carries the writer's PID and a tag of its host, so a later
save can remove what a killed writer of this host left, and never touches a
live process's file (or another machine's, on a shared folder).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import stat
import sys

from absl import logging

from parallel_keras import _files

# Keras picks the format from the suffix, so temporary names keep it.
_SUFFIXES = (".weights.h5", ".keras", ".hdf5", ".h5")
LEGACY_SUFFIXES = (".h5", ".hdf5")
MODEL_SUFFIXES = (".keras", ".h5", ".hdf5")
WEIGHTS_SUFFIXES = (".weights.h5", ".h5", ".hdf5")
# Four hex digits of the host name: a temporary file of another machine
# sharing the folder (NFS) is never judged by this machine's process table.
_HOST_TAG = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:4]


def split_suffix(name: str) -> tuple[str, str]:
    suffix = next((s for s in _SUFFIXES if name.endswith(s)), "")
    return (name[: len(name) - len(suffix)] if suffix else name), suffix


def temporary_path(filepath: str | os.PathLike) -> str:
    """A fresh hidden sibling of `filepath` with the same suffix."""
    path = os.fspath(filepath)
    folder, name = os.path.split(path)
    stem, suffix = _temporary_stem(folder, name)
    token = f"{os.getpid()}-{_HOST_TAG}{secrets.token_hex(2)}"
    return os.path.join(folder, f".{stem}.tmp-{token}{suffix}")


def _path_max(folder: str) -> int:
    try:
        return os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError):
        return 4096


def _name_max(folder: str) -> int:
    try:
        return os.pathconf("/", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _temporary_stem(folder: str, name: str) -> tuple[str, str]:
    """The stem and suffix of `name`'s temporaries, short enough to be a name."""
    stem, suffix = split_suffix(name)
    # Budget a 10-digit PID, so the stem does not depend on the writer's.
    overhead = len(f"..tmp-{'0' * 10}-{_HOST_TAG}0000{suffix}".encode())
    return _files.fitting_stem(folder, stem, overhead), suffix


def remove_stale_temporaries(filepath: str | os.PathLike) -> list[str]:
    """Removes temporaries of `filepath` left by dead processes of this host.

    A process killed mid-save leaves its hidden temporary sibling behind. A
    temporary is removed only when its name carries this host's tag and its
    PID belongs to no running process; a live writer's file is never touched.

    Returns:
        The paths removed.
    """
    folder, name = os.path.split(os.fspath(filepath))
    stem, suffix = _temporary_stem(folder, name)
    pattern = re.compile(
        rf"\.{re.escape(stem)}\.tmp-(\d+)-{_HOST_TAG}[0-9a-f]{{4}}{re.escape(suffix)}"
    )
    removed: list[str] = []
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match is None or _process_alive(int(match.group(1))):
            continue
        stale = os.path.join(folder, entry)
        with contextlib.suppress(OSError):
            os.remove(stale)
            removed.append(stale)
            logging.info("Removed %s, left by a process that died mid-save.", stale)
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # Exists, owned by another user.
    return True


def resolve_link(path: str) -> str:
    """The file a symbolic link (or chain of them) points at; else `path`.

    A dangling link gives the path it would create. Writers put their
    temporary beside this file and rename onto it, so the link survives.
    """
    if not os.path.islink(path):
        return path
    target = os.path.realpath(path)
    if os.path.islink(target):  # realpath stops where links go round.
        raise ValueError(
            "A save through a symbolic link needs the link to end at a file "
            f"path. Received: filepath={path!r}, a link that loops back on "
            f"itself (at {target!r}). Point the link at a file (ln -sfn "
            "TARGET LINK), or remove it and save to a plain path."
        )
    return target


def read_only(path: str) -> bool:
    # Mode bits as well as access(): root may write anything, but a file or
    # folder marked read-only was marked so to be kept.
    return not os.access(path, os.W_OK) or not os.stat(path).st_mode & 0o222


def first_file_ancestor(folder: str) -> str | None:
    """The closest ancestor of a missing `folder` that is a file, if any."""
    current = os.path.abspath(folder)
    while not os.path.exists(current):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None if os.path.isdir(current) else current


def check_output_path(
    filepath: str | os.PathLike,
    suffixes: tuple[str, ...] | None = None,
    *,
    argument: str = "filepath",
    what: str = "save",
    create_folder: bool = False,
) -> str:
    """Checks, before any work, that `filepath` can be written; returns it.

    Args:
        filepath: The user's path.
        suffixes: Accepted suffixes, or None for any.
        argument: How the user passed the path (`"filepath"`, `"-o"`), for
            the message.
        what: The operation, for the message.
        create_folder: Create a missing folder (no regular file in the way),
            as Keras's HDF5 model writer does, instead of refusing.

    Raises:
        ValueError: Wrong suffix, missing folder, a file where a folder
            should be, or the path is a folder.
        PermissionError: The file or its folder is read-only.
    """
    path = os.fspath(filepath)
    shown = f"{argument}={path!r}" if argument.isidentifier() else f"{argument} {path}"
    if os.path.isdir(path):
        raise ValueError(
            f"{what} writes a file, and {path!r} is a folder. Received: "
            f"{shown}. Pass a file path such as "
            f"{os.path.join(path, 'model' + (suffixes or ('.keras',))[0])!r}."
        )
    if suffixes is not None and not path.endswith(suffixes):
        raise ValueError(
            f"{what} picks the format from the suffix, which must be "
            f"{' or '.join(suffixes)}. Received: {shown}. Rename the file "
            f"with one of those suffixes, e.g. {_with_suffix(path, suffixes[0])!r}."
        )
    # Through a link, the file written is the link's target, in its folder.
    folder = os.path.dirname(resolve_link(path)) or "."
    if create_folder and not os.path.isdir(folder) and first_file_ancestor(folder) is None:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            pass  # Explained below: too long, or a read-only parent.
    if not os.path.isdir(folder):
        blocker = first_file_ancestor(folder)
        if blocker is not None:
            raise ValueError(
                f"{what} writes into a folder, but {blocker!r} is a regular "
                f"file, not a folder. Received: {shown}. Pass a path whose "
                "folders are folders, or move that file away."
            )
        try:
            os.stat(folder)
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                raise ValueError(
                    f"{what} needs a path the system can open: at most "
                    f"{_path_max(folder)} bytes in all (PATH_MAX) and "
                    f"{_name_max(folder)} per name. Received: {shown}, whose "
                    f"folder is {len(os.fsencode(folder))} bytes long, too "
                    "long to open even if it exists. Pass a shorter path: "
                    "a relative one from a folder nearer the file (os.chdir), "
                    "or a symbolic link to the folder."
                ) from None
        raise ValueError(
            f"{what} writes into an existing folder, and {folder!r} does not "
            f"exist. Received: {shown}. Create it first "
            f"(os.makedirs({folder!r}) or mkdir -p {folder}), or pass a "
            "path in an existing folder."
        )
    if os.path.exists(path) and read_only(path):
        raise PermissionError(
            f"{what} keeps read-only files as they are. Received: {shown}, a "
            f"read-only file (mode {stat.filemode(os.stat(path).st_mode)}). "
            f"Make it writable (chmod u+w {path}) to replace it, or pass "
            "another path."
        )
    if read_only(folder):
        raise PermissionError(
            f"{what} needs a folder this process can write. Received: "
            f"{shown}, whose folder {folder!r} is read-only. Pass a path in "
            f"a writable folder, or make it writable (chmod u+w {folder})."
        )
    return path


def _with_suffix(path: str, suffix: str) -> str:
    stem, _ = split_suffix(path)
    stem = os.path.splitext(stem)[0] if stem == path else stem
    return stem + suffix


def refuse_prompt_without_terminal(path: str, what: str = "save") -> None:
    """overwrite=False on an existing file: Keras prompts, which needs a terminal."""
    try:
        terminal = sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # Closed or replaced (pytest, daemons).
        terminal = False
    if terminal:
        return
    raise FileExistsError(
        f"{what} with overwrite=False asks before replacing a file, and there "
        f"is no terminal to ask on (standard input is not a terminal, as "
        f"under the launcher). Received: filepath={path!r}, which exists. "
        "Pass overwrite=True to replace it, or another path."
    )
