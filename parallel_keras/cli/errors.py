# SPDX-License-Identifier: Apache-2.0
"""The exit codes and the error line every `parallel-keras` command uses.

A command raises `UsageError` for what argparse cannot see (a missing or
unusable input or output path, a value that is wrong, an output it will not
overwrite) and `CommandFailed` when it ran and failed; `main.main` turns
either into one line on stderr, as argparse and pip do:

    parallel-keras convert: error: <the rule>. Received: <...>. <the fix>.

and the exit code of the table in `parallel-keras --help`. A usage error is
raised before the command writes or prints anything.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

EXIT_OK = 0
EXIT_FAILED = 1
# argparse's own code for a bad command line.
EXIT_USAGE = 2


class CommandError(Exception):
    """An error a command reports as one line, with its exit code."""

    exit_code = EXIT_FAILED


class CommandFailed(CommandError):
    """The command ran and failed (training, a check, a file it processed)."""

    exit_code = EXIT_FAILED


class UsageError(CommandError):
    """The command line cannot be used: found before anything was done."""

    exit_code = EXIT_USAGE


@contextlib.contextmanager
def raised_as(error_type: type[CommandError], *types: type[BaseException]) -> Iterator[None]:
    """Re-raises the library's `types` (e.g. ValueError) as `error_type`.

    The library's messages already carry the rule, the value received and
    the fix; only the kind of error (and so the exit code) is decided here.
    """
    try:
        yield
    except types as error:
        raise error_type(str(error)) from error


def prefix(command: str | None) -> str:
    """`parallel-keras <command>: error: `, argparse's form for a subparser."""
    program = f"parallel-keras {command}" if command else "parallel-keras"
    return f"{program}: error: "


def report(command: str | None, error: CommandError, stream: TextIO | None = None) -> int:
    """Prints `error` as the command's error line; returns its exit code."""
    stream = stream or sys.stderr
    # What the command printed so far (a report, worker output) comes first.
    sys.stdout.flush()
    print(f"{prefix(command)}{error}", file=stream, flush=True)
    return error.exit_code
