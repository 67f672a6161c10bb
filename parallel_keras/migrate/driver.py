# SPDX-License-Identifier: Apache-2.0
"""Applying the migration to files: discovery, diffs, safe writes.

Nothing is written unless asked (`in_place` or an output path). Every write
goes to a temporary file in the same folder that is renamed over the target
(`parallel_keras._files`); in place, the original is first copied to
`PATH.orig`. So an interrupted run leaves either the old file or the new
one, never half of one. A file that fails (syntax error, unreadable) is
reported and left untouched; the other files are still processed.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import io
import os
import shutil
import stat
import tokenize
from collections.abc import Sequence

from absl import logging

from parallel_keras import _files
from parallel_keras.migrate import engine, files
from parallel_keras.migrate import project as project_lib
from parallel_keras.migrate import report as report_lib


@dataclasses.dataclass
class FileResult:
    """Outcome of migrating one file.

    Args:
        path: The file.
        source: Original text, or None when it could not be read.
        migrated: Rewritten text, or None when the file failed.
        report: Its report (with `error` set when it failed).
        relative: Path under the output folder for `-o DIR`. Defaults to the
            file's name.
        encoding: The file's encoding (PEP 263 declaration, else UTF-8),
            used again to write it. Defaults to "utf-8".
    """

    path: str
    source: str | None
    migrated: str | None
    report: report_lib.FileReport
    relative: str = ""
    encoding: str = "utf-8"

    @property
    def changed(self) -> bool:
        """Whether the migration changed the text."""
        return self.migrated is not None and self.migrated != self.source


def find_python_files(paths: list[str]) -> list[tuple[str, str]]:
    """Expands folders into their `.py` files.

    Args:
        paths: Files and folders.

    Returns:
        (path, path relative to the folder it was found in) pairs, in order.

    Raises:
        ValueError: If a path does not exist.
    """
    found: list[tuple[str, str]] = []
    for path in paths:
        if os.path.isdir(path):
            before = len(found)
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        full = os.path.join(root, name)
                        found.append((full, os.path.relpath(full, path)))
            if len(found) == before:
                raise ValueError(
                    "migrate rewrites Python files, and a folder "
                    f"given must contain some. Received: {path!r}, which has no "
                    ".py file (searched recursively). Pass the folder or the "
                    "files that hold the training scripts."
                )
        elif os.path.exists(path) or os.path.islink(path):  # A bad link: reported per file.
            found.append((path, os.path.basename(path)))
        else:
            raise ValueError(
                f"migrate needs existing files or folders. "
                f"Received: {path!r}, which does not exist. Check the path "
                f"(relative paths start from {os.getcwd()!r})."
            )
    return found


# Folders of tools, not of the project: never copied by `-o`.
_SKIPPED_FOLDERS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".ipynb_checkpoints"})


def find_data_files(paths: list[str]) -> list[tuple[str, str]]:
    """The other files of the folders given, which `-o` copies unchanged.

    A migrated package still needs what lies beside its code (vocabulary
    JSON, packaged `.hdf5` weights, configs): `-o OUT` writes the whole tree.

    Args:
        paths: Files and folders, as given to `find_python_files`.

    Returns:
        (path, path relative to its folder) pairs of every file that is not
        `.py` (nor compiled Python), in order.
    """
    found: list[tuple[str, str]] = []
    for path in paths:
        if not os.path.isdir(path):
            continue
        for root, dirs, file_names in os.walk(path):
            dirs[:] = sorted(name for name in dirs if name not in _SKIPPED_FOLDERS)
            for name in sorted(file_names):
                if name.endswith((".py", ".pyc", ".pyo")):
                    continue
                full = os.path.join(root, name)
                if os.path.isfile(full):  # Not a pipe or socket.
                    found.append((full, os.path.relpath(full, path)))
    return found


def scan_project(files: list[tuple[str, str]]) -> project_lib.Project:
    """What the files migrated together define, for each file's rewrite.

    Args:
        files: (path, relative path) pairs from `find_python_files`.

    Returns:
        A `Project` to pass to `migrate_file`.
    """
    return project_lib.scan_project(files, lambda path: read_source(path)[0])


def migrate_file(
    path: str, relative: str | None = None, project: project_lib.Project | None = None
) -> FileResult:
    """Reads and migrates one file; never raises for a bad file.

    Args:
        path: A Python file.
        relative: Its path under an output folder. Defaults to its name.
        project: What the other files of its folder define (`scan_project`).
            Defaults to None: the file alone.

    Returns:
        A `FileResult`; on failure its report carries the error.
    """
    relative = relative or os.path.basename(path)
    try:
        source, encoding = read_source(path)
    except (OSError, ValueError) as error:
        report = report_lib.FileReport(path, error=str(error))
        return FileResult(path, None, None, report, relative)
    try:
        result = engine.migrate_source(source, path, project=project)
    except engine.MigrationError as error:
        report = report_lib.FileReport(path, error=str(error))
        return FileResult(path, source, None, report, relative, encoding)
    except RecursionError:
        report = report_lib.FileReport(path, error=files.too_deep(path))
        return FileResult(path, source, None, report, relative, encoding)
    return FileResult(path, source, result.migrated, result.report, relative, encoding)


def read_source(path: str) -> tuple[str, str]:
    """Reads a Python file as Python does: PEP 263 declaration, else UTF-8.

    Args:
        path: The file.

    Returns:
        The text (line endings kept) and the encoding to write it back with.

    Raises:
        ValueError: If the declared encoding is unknown or the bytes do not
            decode; the message gives the line and the fix.
        ValueError: Also if the file cannot be read, is not a regular file
            or is too large (see `files.read_source_bytes`).
    """
    data = files.read_source_bytes(path)  # Pipes, links, size: see `files`.
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing" in str(error):
            encoding = "utf-8"  # Undeclared, and not UTF-8: reported below.
        else:
            raise ValueError(
                f"{path} declares an encoding Python does not know. Received: "
                f"{error}. Fix the `# -*- coding: ... -*-` line (PEP 263)."
            ) from error
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise ValueError(
            f"{path} is not valid {encoding}, the encoding Python reads it "
            f"with. Received: byte 0x{data[error.start]:02x} at line {line}, "
            f"column {column}. Save the file as UTF-8, or declare its "
            "encoding on the first or second line, e.g. "
            "`# -*- coding: latin-1 -*-` (PEP 263)."
        ) from error


def unified_diff(result: FileResult) -> str:
    """The change as a unified diff (`a/PATH` -> `b/PATH`).

    Args:
        result: A result of `migrate_file`.

    Returns:
        The diff text, or "" when the file failed or nothing changed.
    """
    if result.source is None or result.migrated is None or not result.changed:
        return ""
    return "".join(
        difflib.unified_diff(
            result.source.splitlines(keepends=True),
            result.migrated.splitlines(keepends=True),
            fromfile=f"a/{result.path}",
            tofile=f"b/{result.path}",
        )
    )


def write_in_place(result: FileResult) -> bool:
    """Replaces a changed file, keeping the original as `PATH.orig`.

    Args:
        result: A successful, changed result.

    Returns:
        True when the file was written; False when unchanged or when
        `PATH.orig` already exists (then the report gets the error and the
        file is left as it was).
    """
    if result.migrated is None or not result.changed:
        return False
    backup = result.path + ".orig"
    if os.path.exists(backup):
        result.report.error = (
            f"{backup} already exists (from an earlier run?), so the original "
            "could not be kept. Move it away and run again; the file was left "
            "untouched."
        )
        return False
    try:
        files.replace_keeping_original(result.path, result.migrated, result.encoding)
    except ValueError as error:
        result.report.error = str(error)
        return False
    logging.info("Migrated %s (original kept as %s).", result.path, backup)
    return True


def output_paths(results: list[FileResult], output: str, single_file: bool) -> list[str]:
    """Where `-o OUTPUT` writes each result; checks every one before any write.

    Args:
        results: Results, in order (failed ones get no path: "").
        output: A file path when `single_file`, else a folder.
        single_file: Whether one input file was given.

    Returns:
        One destination per result.

    Raises:
        ValueError: If a destination is an input file, already exists, or
            cannot be created (a file in the way, a read-only folder). The
            message names the user's `-o` path.
    """
    destinations = []
    for result in results:
        if result.migrated is None:
            destinations.append("")
            continue
        if single_file and not os.path.isdir(output):
            destination = output
        else:
            destination = os.path.join(output, result.relative)
        _check_destination(destination, output, result.path)
        destinations.append(destination)
    return destinations


def _check_destination(destination: str, output: str, source: str) -> None:
    received = f"Received: -o {output}"
    if os.path.exists(destination) and os.path.samefile(destination, source):
        raise ValueError(
            "-o must name a new file, not the script being migrated: writing "
            f"over it would lose the original. {received}, which is "
            f"{source}. Use --in-place to rewrite it (keeping {source}.orig), "
            "or pass another -o path."
        )
    if os.path.lexists(destination):
        raise ValueError(
            "-o does not overwrite existing files. "
            f"{received}, and {destination} already exists. Delete it, or "
            "pass a new -o path."
        )
    folder = os.path.dirname(os.path.abspath(destination))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(
            "-o must be a path in a folder, and a regular file is in the way. "
            f"{received}: {existing} is a file, so {destination} cannot be "
            "created. Pass an -o path outside it."
        )
    mode = stat.S_IMODE(os.stat(existing).st_mode)
    if not mode & 0o222 or not os.access(existing, os.W_OK):
        raise ValueError(
            "-o must be in a folder you can write to. "
            f"{received}: the folder {existing} is read-only. Pass an -o path "
            "in a writable folder, or make that folder writable."
        )


def write_output(
    results: list[FileResult],
    output: str,
    single_file: bool,
    data_files: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """Writes every migrated file under `output` (or to it, for one file).

    Every destination is checked first (see `output_paths`), so a refused
    output writes nothing.

    Args:
        results: Results; failed files are skipped.
        output: A file path when `single_file`, else a folder.
        single_file: Whether one input file was given.
        data_files: (path, relative path) of the folders' other files
            (`find_data_files`), copied unchanged under `output`. Defaults to
            none.

    Returns:
        The paths written.

    Raises:
        ValueError: As `output_paths`, or when the write itself fails (the
            message names the destination, not a temporary file).
    """
    destinations = output_paths(results, output, single_file)
    copies = []
    for source, relative in data_files:
        destination = os.path.join(output, relative)
        _check_destination(destination, output, source)
        copies.append((source, destination))
    written = []
    for result, destination in zip(results, destinations):
        if not destination or result.migrated is None:  # A failed file: nothing to write.
            continue
        try:
            os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
            _files.write_text(
                destination, result.migrated, encoding=result.encoding, mode_from=result.path
            )
        except OSError as error:
            raise ValueError(
                f"Could not write {destination} for -o {output}: "
                f"{error.strerror or error}. Pass an -o path in a writable folder."
            ) from error
        written.append(destination)
    for source, destination in copies:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
            _files.replace_with(destination, functools.partial(shutil.copy2, source))
        except OSError as error:
            raise ValueError(
                f"Could not copy {source} to {destination} for -o {output}: "
                f"{error.strerror or error}. Pass an -o path in a writable folder."
            ) from error
        written.append(destination)
    return written


def check_output(
    results: list[FileResult],
    output: str,
    single_file: bool,
    data_files: list[tuple[str, str]] | tuple[()] = (),
) -> None:
    """Refuses `-o OUTPUT` as `write_output` would, without writing anything.

    The command line calls it before it prints or writes, so a refused `-o`
    is a usage error with nothing done.

    Args:
        results: Results, as given to `write_output`.
        output: A file path when `single_file`, else a folder.
        single_file: Whether one input file was given.
        data_files: The folders' other files, as given to `write_output`.
            Defaults to none.

    Raises:
        ValueError: As `output_paths`, also for a data file's destination.
    """
    output_paths(results, output, single_file)
    for source, relative in data_files:
        _check_destination(os.path.join(output, relative), output, source)
