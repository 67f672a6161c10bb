"""Entry point of the `parallel-keras` console script."""

from __future__ import annotations

import importlib
import sys

from absl import app
from absl.flags import argparse_flags

# Subcommand name -> module defining `add_parser(subparsers)`.
SUBCOMMANDS = {
    "demo": "parallel_keras.cli.demo",
    "convert": "parallel_keras.cli.convert",
    "launch": "parallel_keras.cli.launch",
    "migrate": "parallel_keras.cli.migrate",
}


def parse_flags(argv: list[str]):
    parser = argparse_flags.ArgumentParser(
        prog="parallel-keras",
        description="Legacy Keras multi-GPU training on modern TensorFlow.",
    )
    subparsers = parser.add_subparsers(dest="subcommand", required=True)
    for module in SUBCOMMANDS.values():
        importlib.import_module(module).add_parser(subparsers)
    return parser.parse_args(argv[1:])


def main(args) -> int:
    return args.run(args) or 0


def run() -> None:
    """Console-script entry point."""
    app.run(main, argv=sys.argv, flags_parser=parse_flags)
