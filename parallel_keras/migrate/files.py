# SPDX-License-Identifier: Apache-2.0
"""The files `migrate` reads and writes: one bad file is a report line, never a crash.

`migrate` runs over whole project folders, where it meets what a folder
holds besides scripts: named pipes and sockets called `*.py` (opening one
blocks forever), links that loop, unreadable files, generated files of
megabytes (LibCST would take minutes), expressions nested past Python's
recursion limit, read-only folders and full disks. Each is an error on
that file's line of the report, naming the file, the rule and the fix; the
other files are migrated as usual.

`--in-place` keeps the original as `PATH.orig`, and both writes are atomic
(`parallel_keras._files`): a full disk leaves neither a truncated `.orig`
(which a re-run would then refuse to replace, keeping the partial copy as
the only backup) nor a half-written script. If the script cannot be
replaced, the `.orig` just written is removed again, so a re-run starts
from the same state.

Standard library only: `migrate` runs where TensorFlow is not installed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat

from parallel_keras import _files

# Scripts are kilobytes; LibCST needs about a minute and a half of CPU per
# megabyte (measured on this project's CI machine), so a larger file is
# almost surely generated and would stall the run with no output.
MAX_SOURCE_BYTES = 512 * 1024

_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO); reading it would wait for a writer forever",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}


def read_source_bytes(path: str) -> bytes:
    """The bytes of a script, or ValueError saying why the file is skipped.

    Args:
        path: The file (a link is followed).

    Returns:
        Its bytes.

    Raises:
        ValueError: The file is a link loop, not a regular file (a pipe
            would block forever), larger than `MAX_SOURCE_BYTES`, or
            cannot be read.
    """
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer, so its kind
        # can be checked before anything is read.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(_unreadable(path, error)) from None
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise ValueError(
                f"{path}: migrate reads regular files only, and skipped this "
                f"one. Received: {kind}. Rename it if it is not a script, or "
                "pass the scripts (or their folder) without it."
            )
        size = os.fstat(descriptor).st_size
        if size > MAX_SOURCE_BYTES:
            raise ValueError(
                f"{path}: migrate rewrites training scripts of at most "
                f"{MAX_SOURCE_BYTES // 1024} KiB (a larger file takes LibCST "
                f"minutes and is usually generated). Received: {size} bytes. "
                "Migrate the scripts that use Keras, not generated files, or "
                "split this one into modules."
            )
        os.set_blocking(descriptor, True)
        try:
            return file.read()
        except OSError as error:
            raise ValueError(_unreadable(path, error)) from None


def _unreadable(path: str, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return (
            f"{path}: migrate follows symbolic links to the file they name, "
            "and this one loops back on itself (or through too many links). "
            "Received: a symbolic link loop. Point the link at the script "
            "(ln -sfn TARGET LINK) or remove it."
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        return (
            f"{path}: migrate must read a file to rewrite it. Received: "
            f"{error.strerror}. Make it readable (chmod u+r {path}) or run "
            "as its owner."
        )
    return (
        f"{path}: migrate could not read this file. Received: "
        f"{error.strerror or error}. Check that the file exists and is "
        "readable."
    )


def too_deep(path: str) -> str:
    """The report line for a file whose syntax tree exceeds the recursion limit."""
    return (
        f"{path}: migrate parses each file into a syntax tree, and this one "
        "nests deeper than Python's recursion limit allows. Received: "
        "RecursionError (typically a very long chain of `+` or nested "
        "brackets, e.g. in generated code). Rewrite that expression (e.g. "
        "sum([...]) or a loop) and run migrate again, or migrate this file "
        "by hand; the other files were migrated."
    )


def replace_keeping_original(path: str, text: str, encoding: str) -> str:
    """Writes `text` over `path`, first keeping the original as `PATH.orig`.

    Both writes are atomic; on failure nothing changed (a `.orig` written by
    this call is removed again).

    Args:
        path: The script.
        text: Its migrated text.
        encoding: The encoding to write it with.

    Returns:
        The `.orig` path.

    Raises:
        ValueError: The folder is read-only, the disk is full, or another
            write error; the message names `path` and the fix.
    """
    backup = path + ".orig"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.stat(folder).st_mode & 0o222:
        # The mode bits, not only access(): root may write anywhere, but a
        # folder marked read-only was marked so to be kept as it is.
        raise ValueError(
            _write_error(
                path,
                backup,
                PermissionError(errno.EACCES, "the folder is read-only (no write permission bits)"),
            )
        )
    try:
        # copy2: the original bytes and times, exactly.
        _files.replace_with(backup, lambda temporary: shutil.copy2(path, temporary))
    except OSError as error:
        raise ValueError(_write_error(path, backup, error)) from None
    try:
        _files.write_text(path, text, encoding=encoding, mode_from=path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.remove(backup)
        raise ValueError(_write_error(path, path, error)) from None
    return backup


def _write_error(path: str, written: str, error: OSError) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = f"Free space on the disk holding {folder} and run again."
    elif error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = (
            f"Make the folder writable (chmod u+w {folder}), or write the "
            "migrated files elsewhere with -o OUT."
        )
    else:
        fix = "Fix that and run again, or write elsewhere with -o OUT."
    return (
        f"{path}: --in-place must write the original's copy (.orig) and the "
        "new script in the script's folder; writing "
        f"{os.path.basename(written)} failed, so the script was left as it "
        f"was and no .orig kept. Received: {error.strerror or error}. {fix}"
    )
