# SPDX-License-Identifier: Apache-2.0
"""`python -m benchmarks [COMMAND] [flags]`: every benchmark of parallel_keras.

Commands (`python -m benchmarks COMMAND --help` lists each one's flags):

    suite            (the default) every model x mode x replica count, each
                     run in its own process; JSON, table, plot, baseline.
    shim-overhead    multi_gpu_model against hand-written MirroredStrategy,
                     alternating rounds in one process; wrapping time and
                     peak RSS of an Xception template, in fresh processes.
    cpu-reduction    the two gradient reductions on simulated CPU devices,
                     alternating rounds in one process.
    device-parallel  a model placed on 2 devices against no placement.
    multi-worker     one process x 2 devices against 2 workers x 1 and x 2.
    startup          start-up of `import parallel_keras` and the CLI, as
                     whole processes.
    accumulation     gradient_accumulation_steps=4 against none, per batch,
                     alternating rounds in one process.
    first-step       time to a deep model's first train step (tracing):
                     multi_gpu_model, native MirroredStrategy, one device,
                     each a fresh process, interleaved rounds.

Examples:

    python -m benchmarks --quick
    python -m benchmarks --quick --baseline=benchmarks/results/quick.json
    python -m benchmarks shim-overhead --replicas=4
    python -m benchmarks startup --runs=9
    python -m benchmarks first-step --blocks=24 --rounds=3
"""

from __future__ import annotations

import importlib
import os
import sys

if __package__ in (None, ""):
    # Started as a file (a multi-worker benchmark's workers, under
    # `parallel-keras launch`), not with -m.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COMMANDS = {
    "suite": "benchmarks.suite.cli",
    "shim-overhead": "benchmarks.shim_overhead",
    "cpu-reduction": "benchmarks.cpu_reduction",
    "device-parallel": "benchmarks.device_parallel",
    "multi-worker": "benchmarks.multi_worker",
    "startup": "benchmarks.startup",
    "accumulation": "benchmarks.accumulation",
    "first-step": "benchmarks.first_step",
}
DEFAULT_COMMAND = "suite"
_HELP = ("-h", "--help", "--helpshort", "--helpfull", "-?")


def split_command(argv: list[str]) -> tuple[str, list[str]]:
    """(command, its arguments) from `python -m benchmarks` arguments."""
    if len(argv) > 1 and not argv[1].startswith("-"):
        return argv[1], argv[2:]
    return DEFAULT_COMMAND, argv[1:]


def main() -> None:
    command, args = split_command(sys.argv)
    if command not in COMMANDS:
        print(
            f"error: python -m benchmarks runs one of {', '.join(COMMANDS)}. "
            f"Received: {command!r}. Example: python -m benchmarks shim-overhead.",
            file=sys.stderr,
        )
        sys.exit(2)
    from absl import app, flags

    module = importlib.import_module(COMMANDS[command])
    if any(arg in _HELP for arg in args):
        # absl exits 1 after --help; asking for help is not an error.
        if command == DEFAULT_COMMAND and not sys.argv[1:2] == [command]:
            print(__doc__)
        print(module.__doc__)
        print(flags.FLAGS.module_help(module.__name__))
        sys.exit(0)
    # absl's --help lists the flags of the module named by argv[0].
    sys.argv = [module.__name__, *args]
    app.run(module.main, argv=sys.argv)


if __name__ == "__main__":
    main()
