"""`parallel-keras migrate`: rewrite legacy Keras 2 multi-GPU scripts.

    parallel-keras migrate PATH... [--diff | --in-place | -o OUT] [--strict]

Prints the report (and with --diff the diff before it). Exit codes: 0 done;
1 a file could not be migrated (it was left untouched); 3 with --strict,
something was flagged for a person. Runs without TensorFlow installed.
"""

from __future__ import annotations

import sys

EXIT_FAILED_FILE = 1
EXIT_FLAGGED = 3


def add_parser(subparsers) -> None:
    """Adds the `migrate` subcommand."""
    parser = subparsers.add_parser(
        "migrate",
        help="Rewrite legacy Keras 2 multi-GPU scripts for Keras 3 + parallel_keras.",
        description=(
            "Rewrites multi_gpu_model imports, template-saving checkpoint "
            "classes, optimizer lr/decay, *_generator methods, save formats "
            "and tf.device scopes; flags TF1 session code. Without --in-place "
            "or -o nothing is written."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="Python files or folders (searched for .py files).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true",
                      help="Print a unified diff before the report.")
    mode.add_argument("--in-place", action="store_true",
                      help="Rewrite the files, keeping each original as PATH.orig.")
    mode.add_argument("-o", "--output", metavar="OUT",
                      help="Write rewritten files to OUT (a file for one input file, "
                           "else a folder).")
    parser.add_argument("--strict", action="store_true",
                        help=f"Exit with {EXIT_FLAGGED} when anything is flagged.")
    parser.set_defaults(run=run)


def run(args) -> int:
    """Runs the migration; returns the exit code."""
    from parallel_keras import migrate

    try:
        files = migrate.find_python_files(args.paths)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED_FILE
    results = [migrate.migrate_file(path, relative) for path, relative in files]
    if args.diff:
        for result in results:
            sys.stdout.write(migrate.unified_diff(result))
    if args.in_place:
        for result in results:
            if result.report.ok:
                migrate.write_in_place(result)
    elif args.output:
        single = len(args.paths) == 1 and len(files) == 1 and files[0][0] == args.paths[0]
        migrate.write_output(results, args.output, single_file=single)
    print(migrate.format_report([result.report for result in results]))
    if any(not result.report.ok for result in results):
        return EXIT_FAILED_FILE
    if args.strict and any(result.report.flags for result in results):
        return EXIT_FLAGGED
    return 0


def main(argv: list[str] | None = None) -> int:
    """Runs the subcommand alone (`python -m parallel_keras.cli.migrate`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="parallel-keras")
    add_parser(parser.add_subparsers(dest="subcommand", required=True))
    args = parser.parse_args(["migrate", *(sys.argv[1:] if argv is None else argv)])
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
