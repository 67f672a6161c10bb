# SPDX-License-Identifier: Apache-2.0
"""`python -m benchmarks [suite]`: the benchmark suite, the default command.

Examples:

    python -m benchmarks --quick
    python -m benchmarks --models=mlp,resnet50 --modes=single,mirrored,multi_gpu_model \
        --replicas=1,2,4,8 --global-batch-size=256 --steps=50
    python -m benchmarks --quick --baseline=benchmarks/results/quick.json

Run it from the repository root as `python -m benchmarks`, or from any
folder as `python path/to/repo/benchmarks` (the folder's `__main__.py`);
results go to --results-dir (by default a cache folder,
$XDG_CACHE_HOME/parallel_keras/benchmarks or ~/.cache/parallel_keras/
benchmarks), never into the code's own folder, unless --output and --plot
name files.

Each model's configurations run in one process, timed side by side in
--rounds alternating rounds beside an A/A control (the `mirrored` run at the
most replicas, measured twice); every ratio is the median over rounds with
a 95% bootstrap interval, and reads "no difference measured" when the
interval includes 1 or lies within the control.

Exit codes: 0 all runs measured; 1 a regression against --baseline; 2 a run
failed (its error is in the table and the JSON, and the last lines name each
failed run with its reason), a flag is wrong, or what the run needs is not
installed (`python3 -m pip install ".[bench]"`; checked before anything is
measured).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys

from absl import app, flags

from benchmarks import flag_spellings
from benchmarks.suite import baseline as baseline_lib
from benchmarks.suite import config as config_lib
from benchmarks.suite import models, modes, runner
from benchmarks.suite import results as results_lib

_DEFAULT = config_lib.SuiteConfig()


def default_results_dir() -> str:
    """A cache folder of the user's, never the code's own (it may be installed read-only)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "parallel_keras", "benchmarks")


_MODELS = flags.DEFINE_list(
    "models", list(_DEFAULT.models), f"Models to train, from {sorted(models.MODELS)}."
)
_MODES = flags.DEFINE_list("modes", list(_DEFAULT.modes), f"Modes, from {list(modes.MODES)}.")
_REPLICAS = flags.DEFINE_list(
    "replicas",
    [str(n) for n in _DEFAULT.replicas],
    "Replica counts (devices; workers for multi_worker), e.g. 1,2,4,8.",
)
_GLOBAL_BATCH_SIZE = flags.DEFINE_integer(
    "global-batch-size",
    _DEFAULT.global_batch_size,
    "Rows per step across all replicas (split evenly between them).",
)
_STEPS = flags.DEFINE_integer("steps", _DEFAULT.steps, "Timed steps per round.")
_ROUNDS = flags.DEFINE_integer(
    "rounds",
    _DEFAULT.rounds,
    "Alternating rounds per model (the repetitions behind each ratio's interval).",
)
_WARMUP_STEPS = flags.DEFINE_integer(
    "warmup-steps", _DEFAULT.warmup_steps, "Untimed steps before the timed ones."
)
_DATASET = flags.DEFINE_string(
    "dataset",
    "synthetic",
    "'synthetic', or 'tfds:NAME' read from --data-dir (never downloaded).",
)
_DATA_DIR = flags.DEFINE_string("data-dir", None, "TFDS data directory for --dataset=tfds:NAME.")
_RESULTS_DIR = flags.DEFINE_string(
    "results-dir",
    None,
    "Folder for latest.json and latest.png. Defaults to a cache folder "
    "($XDG_CACHE_HOME/parallel_keras/benchmarks, else ~/.cache/parallel_keras/benchmarks).",
)
_OUTPUT = flags.DEFINE_string(
    "output", None, "Where to write the JSON results. Defaults to --results-dir/latest.json."
)
_PLOT = flags.DEFINE_string(
    "plot",
    None,
    "Where to write the PNG plot ('' for none). Defaults to --results-dir/latest.png.",
)
_QUICK = flags.DEFINE_bool(
    "quick",
    False,
    "Preset for a 2-core machine, loaded or not: fewer rows (mlp, cnn, "
    "two_branch_lstm; 1 and 2 replicas; 5 steps per round), as many rounds as "
    "the full suite; it prints its own noise (the A/A control of each model). "
    "Measured times and figures: docs/benchmarks.md. Flags given explicitly "
    "override it.",
)
_BASELINE = flags.DEFINE_string(
    "baseline", None, "An earlier results JSON; exit 1 when a run regressed against it."
)
_THRESHOLD = flags.DEFINE_float(
    "regression-threshold",
    baseline_lib.DEFAULT_THRESHOLD,
    "Largest tolerated drop in samples/s against --baseline, as a fraction.",
)
_RUN_TIMEOUT = flags.DEFINE_float(
    "run-timeout-s",
    _DEFAULT.run_timeout_s,
    "Seconds per configuration (a model's process gets this times its configurations) before it is stopped as failed.",
)


flag_spellings.keep_old_spellings(
    _MODELS,
    _MODES,
    _REPLICAS,
    _GLOBAL_BATCH_SIZE,
    _STEPS,
    _ROUNDS,
    _WARMUP_STEPS,
    _DATASET,
    _DATA_DIR,
    _OUTPUT,
    _PLOT,
    _QUICK,
    _BASELINE,
    _THRESHOLD,
    _RUN_TIMEOUT,
)


def _config() -> config_lib.SuiteConfig:
    base = config_lib.QUICK if _QUICK.value else _DEFAULT
    changes = {}
    for holder, name, convert in (
        (_MODELS, "models", tuple),
        (_MODES, "modes", tuple),
        (_REPLICAS, "replicas", lambda values: tuple(_replica_count(v) for v in values)),
        (_GLOBAL_BATCH_SIZE, "global_batch_size", int),
        (_STEPS, "steps", int),
        (_ROUNDS, "rounds", int),
        (_WARMUP_STEPS, "warmup_steps", int),
        (_DATASET, "dataset", str),
        (_DATA_DIR, "data_dir", lambda value: value),
        (_RUN_TIMEOUT, "run_timeout_s", float),
    ):
        # Under --quick only flags the user set override the preset.
        if not _QUICK.value or holder.present:
            changes[name] = convert(holder.value)
    return base.replace(**changes)


def _replica_count(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"--replicas takes integers. Received: --replicas item {value!r}. "
            "Example: --replicas=1,2,4."
        ) from None


BENCH_EXTRA_INSTALL = 'python3 -m pip install ".[bench]"'


def missing_requirements(config: config_lib.SuiteConfig, plot: str) -> list[str]:
    """What this run needs from the `bench` extra that is not installed."""
    needed = {}
    if plot:
        needed["matplotlib"] = "matplotlib (for --plot; --plot='' skips the plot)"
    if config.dataset.startswith("tfds:"):
        needed["tensorflow_datasets"] = "tensorflow-datasets (for --dataset=tfds:...)"
    return [why for module, why in needed.items() if importlib.util.find_spec(module) is None]


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    # A SIGTERM stops the run like Ctrl-C: the measuring process goes too.
    signal.signal(signal.SIGTERM, _interrupt)
    results_dir = _RESULTS_DIR.value or default_results_dir()
    output = _OUTPUT.value or os.path.join(results_dir, "latest.json")
    plot_path = os.path.join(results_dir, "latest.png") if _PLOT.value is None else _PLOT.value
    try:
        config = _config()
        missing = missing_requirements(config, plot_path)
        if missing:
            print(
                f"error: python -m benchmarks needs {', '.join(missing)}, "
                f"which is not installed. Install the benchmark extra: "
                f"{BENCH_EXTRA_INSTALL}",
                file=sys.stderr,
            )
            return 2
        baseline = results_lib.SuiteResults.load(_BASELINE.value) if _BASELINE.value else None
        suite_results = runner.run_suite(config)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print()
    print(suite_results.table())
    print()
    print(results_lib.provenance(suite_results.header))
    if suite_results.skipped:
        print(
            f"({len(suite_results.skipped)} combinations not applicable, listed "
            "under 'skipped' in the JSON.)"
        )
    if suite_results.header.get("devices_simulated"):
        print(f"\nNOTE: {results_lib.SIMULATED_NOTE}")
    print(f"\nJSON: {suite_results.save(output)}")
    if plot_path:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot

        os.makedirs(os.path.dirname(os.path.abspath(plot_path)), exist_ok=True)
        pyplot.close(suite_results.plot(plot_path))
        print(f"Plot: {plot_path}")
    exit_code = 2 if suite_results.failed else 0
    if baseline is not None:
        comparison = baseline_lib.compare(suite_results, baseline, _THRESHOLD.value)
        print()
        print(comparison.report())
        if comparison.regressed:
            exit_code = 1
    print()
    print(closing_line(suite_results, exit_code))
    return exit_code


def closing_line(suite_results: results_lib.SuiteResults, exit_code: int) -> str:
    """The run's last line(s): what was measured, what failed and why, the exit code."""
    runs = suite_results.runs
    failed = [run for run in runs if run.get("status") != "ok"]
    elapsed = suite_results.header.get("elapsed_s")
    took = f" in {elapsed:.0f} s" if isinstance(elapsed, (int, float)) else ""
    lines = [f"{len(runs) - len(failed)} of {len(runs)} runs measured{took}."]
    for run in failed:
        reason = (run.get("error") or "no reason recorded").strip().splitlines()[-1][:200]
        lines.append(
            f"  FAILED {run['model']} / {run['mode']} / {run['replicas']} replicas: {reason}"
        )
    meaning = {
        0: "every run measured",
        1: "a regression against --baseline",
        2: "a run failed (above)",
    }[exit_code]
    lines.append(f"exit code {exit_code}: {meaning}.")
    return "\n".join(lines)
