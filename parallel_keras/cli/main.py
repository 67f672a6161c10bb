# SPDX-License-Identifier: Apache-2.0
"""Entry point of the `parallel-keras` console script.

Parsing and `--help` import neither TensorFlow nor Keras: each subcommand
module keeps those imports inside its run function.

TensorFlow is quiet unless `-v` is given. On a machine without a GPU it logs
`failed call to cuInit` at ERROR level although nothing went wrong, and a
user cannot tell that line from a real failure. So before a subcommand runs,
`TF_CPP_MIN_LOG_LEVEL` defaults to 3 (fatal only; a value the user set is
kept; the launcher's workers inherit it), and subcommands that use
TensorFlow import it through `parallel_keras.quiet_tensorflow`, which also
keeps its import-time lines out.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import parallel_keras
from parallel_keras.cli import errors

# Subcommand name -> module defining `add_parser(subparsers)`.
SUBCOMMANDS = {
    "demo": "parallel_keras.cli.demo",
    "convert": "parallel_keras.cli.convert",
    "launch": "parallel_keras.cli.launch",
    "migrate": "parallel_keras.cli.migrate",
}

# Subcommands that import TensorFlow in this process.
# `convert` quiets TensorFlow itself, after checking its output path.
_USE_TENSORFLOW = frozenset({"demo"})

_VERBOSE_HELP = "Show TensorFlow's own logging (C++ start-up lines, INFO logs)."
# Commands that never run TensorFlow: -v shows parallel_keras's own INFO lines.
_VERBOSE_HELPS = {
    "migrate": "Show parallel_keras's INFO log lines (each file written with --in-place).",
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions as written and shows each flag's default.

    argparse's own `ArgumentDefaultsHelpFormatter` also prints
    "(default: None)" and "(default: False)", which say nothing; those are
    left out.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
            or isinstance(action, (argparse._HelpAction, argparse._VersionAction))  # noqa: SLF001
        ):
            return text
        return f"{text} (default: %(default)s)"


# The exit codes every subcommand uses (also in `parallel-keras --help`).
EXIT_CODES_HELP = f"""exit codes:
  {errors.EXIT_OK}  success
  {errors.EXIT_FAILED}  the command ran and failed (training, a check, a file it processed)
  {errors.EXIT_USAGE}  usage error: an unknown flag, a bad value, a missing or unusable
     input or output path, an output it will not overwrite; nothing was
     done
  Either error is one line on stderr: `parallel-keras COMMAND: error: ...`.
  launch exits with its failed worker's own code; migrate --strict with 3.
"""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; each subcommand's --help lists only its flags."""
    return _build_parsers()[0]


def _build_parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser, and each subcommand's parser by name."""
    parser = argparse.ArgumentParser(
        prog="parallel-keras",
        description="Legacy Keras multi-GPU training on modern TensorFlow.",
        epilog=EXIT_CODES_HELP,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "-V",
        "--version",
        action="version",
        version=f"parallel-keras {parallel_keras.__version__}",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_VERBOSE_HELP)
    # Plain argparse below the top level: absl's ArgumentParser would add
    # every absl flag (--helpfull) to each subcommand. Not `required`: with
    # no command the full help (which lists the commands) is printed, and an
    # unknown top-level flag is reported as such, not as a missing COMMAND.
    subparsers = parser.add_subparsers(
        dest="subcommand",
        metavar="COMMAND",
        title="commands",
        parser_class=argparse.ArgumentParser,
    )
    for module in SUBCOMMANDS.values():
        importlib.import_module(module).add_parser(subparsers)
    for name, subparser in subparsers.choices.items():
        subparser.formatter_class = HelpFormatter
        # SUPPRESS: without -v here, the top-level count stands.
        subparser.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=argparse.SUPPRESS,
            help=_VERBOSE_HELPS.get(name, _VERBOSE_HELP),
        )
    return parser, subparsers.choices


def parse_flags(argv: list[str]) -> argparse.Namespace:
    """Parses `argv` (with the program name first), as pip and git do.

    No command prints the help and exits 2 (a missing input); an unknown flag is reported by
    the parser it was given to (`parallel-keras demo --bogus` shows the
    demo's usage), exit code 2.
    """
    parser, subcommand_parsers = _build_parsers()
    args, unknown = parser.parse_known_args(argv[1:])
    command = getattr(args, "subcommand", None)
    if unknown:
        owner = subcommand_parsers[command] if command else parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    if command is None:
        # A missing input: exit 2, as the exit-code table says.
        parser.print_help(sys.stderr)
        parser.exit(errors.EXIT_USAGE, f"{errors.prefix(None)}a COMMAND is required.\n")
    return args


def configure_logging(verbose: int) -> None:
    """Quiet TensorFlow unless asked; must run before TensorFlow is imported."""
    # Imported here, after parsing: absl costs ~10 ms `--help` does not need.
    from absl import flags, logging

    # The CLI defines no absl flags; absl logging only needs to know parsing
    # ran, or it warns that it logs "before flag parsing".
    flags.FLAGS.mark_as_parsed()
    logging.use_absl_handler()
    if verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        logging.set_verbosity(logging.INFO)
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        logging.set_verbosity(logging.WARNING)
        # The library's warnings (a restarted launch group, a changed batch)
        # read like the command's other lines, without absl's
        # `W1124 07:04:40.207 140472 file.py:241]` prefix; -v keeps it.
        import logging as std_logging

        logging.get_absl_handler().setFormatter(std_logging.Formatter("%(message)s"))


def main(args: argparse.Namespace) -> int:
    """Runs the parsed command; its `CommandError` becomes the error line.

    Returns:
        The exit code (see `EXIT_CODES_HELP`).
    """
    configure_logging(args.verbose)
    if args.subcommand in _USE_TENSORFLOW:
        from parallel_keras import quiet

        quiet.quiet_tensorflow(verbose=bool(args.verbose))
    try:
        return args.run(args) or errors.EXIT_OK
    except errors.CommandError as error:
        return errors.report(args.subcommand, error)
    except BrokenPipeError:
        # `parallel-keras migrate scripts/ --diff | head`: the reader left,
        # which is not worth a traceback. Python's documented recipe: point
        # stdout at /dev/null so the flush at exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return errors.EXIT_FAILED


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point; exits with the command's exit code.

    Not `absl.app.run`: it imports pdb and more (~10 ms of every `--help`)
    for features this CLI does not offer; `configure_logging` sets up absl
    logging the way it does.

    Args:
        argv: The arguments after `parallel-keras`. Defaults to None:
            `sys.argv[1:]`.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    _escape_what_the_terminal_cannot_show()
    sys.exit(main(parse_flags(["parallel-keras", *arguments])))


def _escape_what_the_terminal_cannot_show() -> None:
    """Writes characters the locale cannot encode as `\\uXXXX` escapes.

    Under an ASCII locale (LC_ALL=C with PYTHONUTF8=0) a Chinese comment in
    a diff, or a worker's non-ASCII line, would otherwise end the command in
    a UnicodeEncodeError.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and stream.errors in ("strict", "surrogateescape"):
            reconfigure(errors="backslashreplace")
