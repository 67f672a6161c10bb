# SPDX-License-Identifier: Apache-2.0
"""Atomic file replacement: write beside the target, then rename into place.

A process killed halfway through writing a file leaves half a file; when
that file is a user's script or their only checkpoint, the work is lost.
Here the new content goes to a temporary sibling (same folder, so the same
filesystem), is flushed to disk, and is moved over the target with
`os.replace`, which POSIX and Windows perform atomically: at every moment
the target is either the previous complete file or the new complete file.
On any failure the temporary file is removed and the target is untouched.

Standard library only: `parallel-keras migrate` uses it where TensorFlow is
not installed, and `saving/` uses it for model and weight files.

Example:

>>> import os, tempfile
>>> from parallel_keras import _files
>>> path = os.path.join(tempfile.mkdtemp(), "train.py")
>>> _files.write_text(path, "print('hello')\\n")
>>> open(path).read()
"print('hello')\\n"
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence

# What a temporary name ends with when no suffix of the target is kept, so
# that a leftover is recognizable by its name.
_TEMPORARY_SUFFIX = ".tmp"


def temporary_sibling(path: str | os.PathLike, keep_suffixes: Sequence[str] = ()) -> str:
    """A fresh hidden name in `path`'s folder, marked as temporary.

    The name is `.STEM.tmp-PID-RANDOM` followed by the first of
    `keep_suffixes` that `path` ends with (writers such as Keras pick the
    format from the suffix), else by `.tmp`. The file is not created.

    Args:
        path: The target file.
        keep_suffixes: Suffixes to keep, longest first (`.weights.h5`
            before `.h5`). Defaults to none.

    Returns:
        The temporary path.
    """
    folder, name = os.path.split(os.fspath(path))
    suffix = next((s for s in keep_suffixes if name.endswith(s)), "")
    stem = name[: len(name) - len(suffix)] if suffix else name
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    ending = suffix or _TEMPORARY_SUFFIX
    # Budget a 10-digit PID: the name does not depend on which PID writes.
    stem = fitting_stem(folder, stem, len(f"..tmp-{'0' * 10}-{'0' * 8}{ending}".encode()))
    return os.path.join(folder, f".{stem}.tmp-{token}{ending}")


def fitting_stem(folder: str, stem: str, overhead: int) -> str:
    """`stem`, shortened so that `overhead` more bytes fit in one file name.

    A file name legal on the filesystem (up to NAME_MAX bytes, 255 on most)
    must not be refused because its temporary sibling's name is longer:
    such a stem keeps its start and gets a hash of the whole stem, so the
    temporaries of two long names in one folder stay apart.
    """
    try:
        limit = os.pathconf(folder or ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    encoded = stem.encode("utf-8", "surrogateescape")
    if len(encoded) + overhead <= limit:
        return stem
    digest = hashlib.sha1(encoded).hexdigest()[:8]
    keep = max(0, limit - overhead - len(digest) - 1)
    start = encoded[:keep].decode("utf-8", "ignore")
    return f"{start}~{digest}"


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike,
    *,
    keep_suffixes: Sequence[str] = (),
    mode_from: str | os.PathLike | None = None,
    refuse_read_only: bool = False,
    temporary: str | None = None,
) -> Iterator[str]:
    """Yields a temporary path to write; on success moves it over `path`.

    After the body wrote the temporary file, its bytes are flushed to disk,
    it gets the permission bits of `mode_from` (else of the target it
    replaces, when there is one), and it is renamed onto `path`. If the body
    or any of that fails, the temporary file is removed, `path` is left as
    it was, and the error propagates.

    Args:
        path: The file to create or replace.
        keep_suffixes: As for `temporary_sibling`. Defaults to none.
        mode_from: A file whose permission bits the result gets. Defaults to
            None: the replaced file's own bits, or the process default
            (umask) for a new file.
        refuse_read_only: Raise instead of replacing a target without write
            permission (a plain write would fail there; a rename would not).
            Defaults to False.
        temporary: The temporary path to use, in `path`'s folder. Defaults
            to None: `temporary_sibling(path, keep_suffixes)`.

    Yields:
        The temporary path; the body must create the file there.

    Raises:
        PermissionError: If `refuse_read_only` and `path` exists read-only.
            Nothing is written then.
    """
    final = os.fspath(path)
    if refuse_read_only and _is_read_only(final):
        raise PermissionError(
            errno.EACCES,
            "An atomic write does not replace a read-only file, which a plain "
            "write would refuse too. Make the file writable (chmod u+w) or "
            "write to another path. Received",
            final,
        )
    if temporary is None:
        temporary = temporary_sibling(final, keep_suffixes)
    try:
        yield temporary
        _fsync_file(temporary)
        if mode_from is not None:
            shutil.copymode(mode_from, temporary)
        elif os.path.exists(final):
            shutil.copymode(final, temporary)
        os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    _fsync_folder(os.path.dirname(os.path.abspath(final)))


def replace_with(
    path: str | os.PathLike,
    write: Callable[[str], object],
    *,
    keep_suffixes: Sequence[str] = (),
    mode_from: str | os.PathLike | None = None,
    refuse_read_only: bool = False,
) -> None:
    """Calls `write(temporary_path)`, then moves the result over `path`.

    Args:
        path: The file to create or replace.
        write: Writes the new content to the path it is given; what it
            returns is ignored.
        keep_suffixes: As for `temporary_sibling`. Defaults to none.
        mode_from: As for `replacing`. Defaults to None.
        refuse_read_only: As for `replacing`. Defaults to False.

    Raises:
        PermissionError: As for `replacing`.
    """
    with replacing(
        path,
        keep_suffixes=keep_suffixes,
        mode_from=mode_from,
        refuse_read_only=refuse_read_only,
    ) as temporary:
        write(temporary)


def write_text(
    path: str | os.PathLike,
    text: str,
    *,
    encoding: str = "utf-8",
    mode_from: str | os.PathLike | None = None,
    refuse_read_only: bool = False,
) -> None:
    """Writes `text` to `path` atomically, line endings exactly as given.

    Args:
        path: The file to create or replace.
        text: The whole new content.
        encoding: Defaults to "utf-8".
        mode_from: As for `replacing`. Defaults to None.
        refuse_read_only: As for `replacing`. Defaults to False.

    Raises:
        PermissionError: As for `replacing`.
        UnicodeEncodeError: If `text` cannot be encoded; `path` is untouched.
    """

    def write(temporary: str) -> None:
        # "x": a name that exists already is never written through.
        with open(temporary, "x", encoding=encoding, newline="") as file:
            file.write(text)

    replace_with(path, write, mode_from=mode_from, refuse_read_only=refuse_read_only)


def _is_read_only(path: str) -> bool:
    if not os.path.exists(path):
        return False
    # The mode bits too: root passes `os.access` on any file.
    mode = stat.S_IMODE(os.stat(path).st_mode)
    return not mode & 0o222 or not os.access(path, os.W_OK)


def _fsync_file(path: str) -> None:
    # Flush the new bytes to disk before the rename makes them the target,
    # so a machine crash cannot leave the target pointing at empty blocks.
    with open(path, "rb") as file:
        os.fsync(file.fileno())


def _fsync_folder(folder: str) -> None:
    # Makes the rename itself durable; some filesystems refuse: best effort.
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
