# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras migrate`: rewrite legacy Keras 2 multi-GPU scripts.

    parallel-keras migrate PATH... [--diff | --in-place | -o OUT] [--strict]

Prints the report (and with --diff the diff before it). Exit codes: see
`_EXIT_CODES`. Runs without TensorFlow installed.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

EXIT_FAILED_FILE = 1
EXIT_FLAGGED = 3
_EXIT_CODES = f"""\
exit codes:
  0  every file was migrated (with --strict: and nothing needs a person)
  {EXIT_FAILED_FILE}  a file could not be read or parsed (it was left untouched), or a
     path or -o was refused (nothing was written)
  2  bad command line
  {EXIT_FLAGGED}  with --strict: something was flagged for a person (the report says
     what and how to fix it; notes left by an earlier run count too)
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
    """Runs the migration; returns the exit code."""
    from parallel_keras import migrate

    try:
        files = migrate.find_python_files(args.paths)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED_FILE
    project = migrate.scan_project(files)
    results = [migrate.migrate_file(path, relative, project) for path, relative in files]
    if args.diff:
        for result in results:
            sys.stdout.write(migrate.unified_diff(result))
    if args.in_place:
        for result in results:
            if result.report.ok:
                migrate.write_in_place(result)
    copied = None
    if args.output:
        single = len(args.paths) == 1 and len(files) == 1 and files[0][0] == args.paths[0]
        data_files = migrate.find_data_files(args.paths)
        try:
            migrate.write_output(results, args.output, single_file=single, data_files=data_files)
        except ValueError as error:
            print(migrate.format_report([result.report for result in results]))
            print(f"error: {error}", file=sys.stderr)
            return EXIT_FAILED_FILE
        copied = [
            result.relative
            for result in results
            if result.report.ok and not result.changed and not single
        ]
        copied = sorted(copied + [relative for _, relative in data_files])
    print(migrate.format_report([result.report for result in results], copied))
    if any(not result.report.ok for result in results):
        return EXIT_FAILED_FILE
    if args.strict and any(result.report.flags for result in results):
        return EXIT_FLAGGED
    return 0


def main(argv: list[str] | None = None) -> int:
    """Runs the subcommand alone (`python -m parallel_keras.cli.migrate`)."""

    parser = argparse.ArgumentParser(prog="parallel-keras")
    add_parser(parser.add_subparsers(dest="subcommand", required=True))
    args = parser.parse_args(["migrate", *(sys.argv[1:] if argv is None else argv)])
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
