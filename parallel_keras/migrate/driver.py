"""Applying the migration to files: discovery, diffs, safe writes.

Nothing is written unless asked (`in_place` or an output path). In-place
writes go to a temporary file in the same folder that is renamed over the
original, after the original was copied to `PATH.orig`, so an interrupted
run leaves either the old file or the new one, never half of one. A file
that fails (syntax error, unreadable) is reported and left untouched; the
other files are still processed.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import shutil
import tempfile

from absl import logging

from parallel_keras.migrate import engine
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
    """

    path: str
    source: str | None
    migrated: str | None
    report: report_lib.FileReport
    relative: str = ""

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
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        full = os.path.join(root, name)
                        found.append((full, os.path.relpath(full, path)))
        elif os.path.exists(path):
            found.append((path, os.path.basename(path)))
        else:
            raise ValueError(
                f"parallel-keras migrate needs existing files or folders. "
                f"Received: {path!r}, which does not exist."
            )
    return found


def migrate_file(path: str, relative: str | None = None) -> FileResult:
    """Reads and migrates one file; never raises for a bad file.

    Args:
        path: A Python file.
        relative: Its path under an output folder. Defaults to its name.

    Returns:
        A `FileResult`; on failure its report carries the error.
    """
    relative = relative or os.path.basename(path)
    try:
        with open(path, encoding="utf-8", newline="") as file:
            source = file.read()
    except (OSError, UnicodeDecodeError) as error:
        report = report_lib.FileReport(path, error=f"cannot read it: {error}")
        return FileResult(path, None, None, report, relative)
    try:
        result = engine.migrate_source(source, path)
    except engine.MigrationError as error:
        report = report_lib.FileReport(path, error=str(error))
        return FileResult(path, source, None, report, relative)
    return FileResult(path, source, result.migrated, result.report, relative)


def unified_diff(result: FileResult) -> str:
    """The change as a unified diff (`a/PATH` -> `b/PATH`), or ''."""
    if not result.changed:
        return ""
    return "".join(
        difflib.unified_diff(
            result.source.splitlines(keepends=True),
            result.migrated.splitlines(keepends=True),
            fromfile=f"a/{result.path}",
            tofile=f"b/{result.path}",
        )
    )


def atomic_write(path: str, text: str, mode_from: str | None = None) -> None:
    """Writes `text` to `path` through a temporary file and a rename.

    Args:
        path: Destination.
        text: Content.
        mode_from: File whose permission bits to copy. Defaults to None.
    """
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(
        dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if mode_from is not None:
            shutil.copymode(mode_from, temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_in_place(result: FileResult) -> bool:
    """Replaces a changed file, keeping the original as `PATH.orig`.

    Args:
        result: A successful, changed result.

    Returns:
        True when the file was written; False when unchanged or when
        `PATH.orig` already exists (then the report gets the error and the
        file is left as it was).
    """
    if not result.changed:
        return False
    backup = result.path + ".orig"
    if os.path.exists(backup):
        result.report.error = (
            f"{backup} already exists (from an earlier run?), so the original "
            "could not be kept. Move it away and run again; the file was left "
            "untouched."
        )
        return False
    atomic_write(backup, result.source, mode_from=result.path)
    atomic_write(result.path, result.migrated, mode_from=result.path)
    logging.info("Migrated %s (original kept as %s).", result.path, backup)
    return True


def write_output(results: list[FileResult], output: str, single_file: bool) -> list[str]:
    """Writes every migrated file under `output` (or to it, for one file).

    Args:
        results: Results; failed files are skipped.
        output: A file path when `single_file`, else a folder.
        single_file: Whether one input file was given.

    Returns:
        The paths written.
    """
    written = []
    for result in results:
        if result.migrated is None:
            continue
        if single_file and not os.path.isdir(output):
            destination = output
        else:
            destination = os.path.join(output, result.relative)
        os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
        atomic_write(destination, result.migrated, mode_from=result.path)
        written.append(destination)
    return written
