# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras migrate`: rewrite legacy Keras 2 multi-GPU scripts.

    parallel-keras migrate PATH... [--diff | --in-place | -o OUT] [--strict]

Prints the report (and with --diff the diff before it). Exit codes: see
`_EXIT_CODES`. Runs without TensorFlow installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from parallel_keras.cli import errors

EXIT_FAILED_FILE = errors.EXIT_FAILED
EXIT_USAGE = errors.EXIT_USAGE
EXIT_FLAGGED = 3
_EXIT_CODES = f"""\
exit codes:
  0  every file was migrated (with --strict: and nothing needs a person)
  {EXIT_FAILED_FILE}  a file could not be read, parsed or written: it was left
     untouched, the other files were migrated (the report says why)
  {EXIT_USAGE}  usage error: a bad flag, a missing PATH, a folder without .py files,
     an -o that is refused, an --in-place that would replace a PATH.orig
     or write in a read-only folder; nothing was printed or written
  {EXIT_FLAGGED}  with --strict: something was flagged for a person (the report says
     what and how to fix it; notes left by an earlier run count too)
Errors are one line on stderr: `parallel-keras migrate: error: ...`.
"""


def add_parser(subparsers) -> None:
    """Adds the `migrate` subcommand."""
    parser = subparsers.add_parser(
        "migrate",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="Rewrite legacy Keras 2 multi-GPU scripts for Keras 3 + parallel_keras.",
        description=textwrap.fill(
            "Rewrites legacy Keras 2 multi-GPU scripts for Keras 3 + "
            "parallel_keras (multi_gpu_model, TF1 session set-up, GPU counts, "
            "checkpoint classes, optimizer lr/decay, *_generator methods and "
            "generators, Keras 1/2 names and modules, backend math, save "
            "formats, tf.device scopes) and reports, file by file, what "
            "changed and what still needs a person. Without --in-place or -o "
            "nothing is written.",
            width=79,
        ),
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="Python files or folders (searched for .py files)."
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="Print a unified diff before the report.")
    mode.add_argument(
        "--in-place",
        action="store_true",
        help="Rewrite the files, keeping each original as PATH.orig.",
    )
    mode.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="Write rewritten files to OUT (a new file for one input "
        "file, else a folder); existing files are never overwritten.",
    )
    parser.add_argument(
        "--strict", action="store_true", help=f"Exit with {EXIT_FLAGGED} when anything is flagged."
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    """Runs the migration; returns the exit code.

    Every path, `-o` and `--in-place` destination is checked before anything
    is printed or written.

    Raises:
        errors.UsageError: A path or destination is refused.
        errors.CommandFailed: A file could not be migrated (after the report).
    """
    from parallel_keras import migrate
    from parallel_keras.migrate import driver

    with errors.raised_as(errors.UsageError, ValueError):
        files = migrate.find_python_files(args.paths)
    project = migrate.scan_project(files)
    results = [migrate.migrate_file(path, relative, project) for path, relative in files]
    single = len(args.paths) == 1 and len(files) == 1 and files[0][0] == args.paths[0]
    data_files = migrate.find_data_files(args.paths) if args.output else []
    if args.output:
        with errors.raised_as(errors.UsageError, ValueError):
            driver.check_output(results, args.output, single_file=single, data_files=data_files)
    if args.in_place:
        _check_in_place(results)
    if args.diff:
        for result in results:
            sys.stdout.write(migrate.unified_diff(result))
    if args.in_place:
        for result in results:
            if result.report.ok:
                migrate.write_in_place(result)
    copied = None
    if args.output:
        # Checked above: a failure now is the write itself (a full disk).
        with errors.raised_as(errors.CommandFailed, ValueError):
            migrate.write_output(results, args.output, single_file=single, data_files=data_files)
        copied = [
            result.relative
            for result in results
            if result.report.ok and not result.changed and not single
        ]
        copied = sorted(copied + [relative for _, relative in data_files])
    print(migrate.format_report([result.report for result in results], copied))
    closing = closing_lines([result.path for result in results if result.changed])
    if closing:
        print(closing)
    failed = [result for result in results if not result.report.ok]
    if failed:
        names = ", ".join(result.path for result in failed[:5])
        if len(failed) > 5:
            names += f" and {len(failed) - 5} more"
        raise errors.CommandFailed(
            f"{len(failed)} of {len(results)} file(s) could not be migrated and "
            f"were left untouched: {names}. The report above says why and how "
            "to fix each."
        )
    if args.strict and any(result.report.flags for result in results):
        return EXIT_FLAGGED
    return errors.EXIT_OK


def closing_lines(changed: list[str]) -> str:
    """How to run what was migrated: without a GPU, and quietly ("" if nothing changed)."""
    if not changed:
        return ""
    script = os.path.basename(changed[0])
    return (
        f"Next: run it as before. Without a GPU, unmodified, on simulated devices: "
        f"PARALLEL_KERAS_SIMULATE_DEVICES=2 python {script}\n"
        "To keep TensorFlow's start-up lines out, make its first lines "
        "`import parallel_keras; parallel_keras.quiet_tensorflow()` (before any "
        "TensorFlow or Keras import; called later it cannot)."
    )


def _check_in_place(results) -> None:
    """Refuses `--in-place` before any file is written.

    Raises:
        errors.UsageError: A changed file's `PATH.orig` exists, or its folder
            is read-only (the mode bits: root may write anywhere, but a
            folder marked read-only was marked so to be kept as it is).
    """
    for result in results:
        if not (result.report.ok and result.changed):
            continue
        backup = result.path + ".orig"
        if os.path.lexists(backup):
            raise errors.UsageError(
                "--in-place keeps each original as PATH.orig and never replaces "
                f"one. Received: {backup} already exists (from an earlier run?), "
                "so the original could not be kept. Move it away and run again; "
                "nothing was written."
            )
        folder = os.path.dirname(os.path.abspath(result.path))
        if not os.stat(folder).st_mode & 0o222 or not os.access(folder, os.W_OK):
            raise errors.UsageError(
                "--in-place writes each new script and its PATH.orig in the "
                f"script's folder. Received: {result.path}, in {folder}, and "
                f"the folder is read-only. Make the folder writable (chmod u+w "
                f"{folder}), or write the migrated files elsewhere with -o OUT; "
                "nothing was written."
            )


def main(argv: list[str] | None = None) -> int:
    """Runs the subcommand alone (`python -m parallel_keras.cli.migrate`)."""
    from parallel_keras.cli import main as cli_main

    arguments = sys.argv[1:] if argv is None else argv
    return cli_main.main(cli_main.parse_flags(["parallel-keras", "migrate", *arguments]))


if __name__ == "__main__":
    sys.exit(main())
