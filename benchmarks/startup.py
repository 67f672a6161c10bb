# SPDX-License-Identifier: Apache-2.0
"""Start-up cost of parallel_keras, timed as whole processes.

    python -m benchmarks startup --runs=9

Times, as separate processes, interleaved round by round so that a busy
machine slows every command alike, and reports the median of each with its
95% interval, and its ratio to bare Python round by round (with the suite's
statistics, `benchmarks.stats`), beside an A/A control: bare Python timed
twice in each round. The commands:

* bare Python start-up (`python -c pass`), the reference;
* `python -c "import parallel_keras"`;
* `parallel-keras --help`;
* `parallel-keras migrate --diff` on the migration corpus (tests/migrate_corpus);
* `python -c "import keras"`, what `import parallel_keras` cost before.

Goals: `import parallel_keras` and `--help` under 1.1 x bare
Python + 50 ms; migrate of the corpus under 2 s. Exit code 1 when a goal is
missed, so the numbers can gate a change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from absl import app, flags

from benchmarks import stats

_RUNS = flags.DEFINE_integer("runs", 9, "Rounds; each round runs every command once.")
_OUTPUT = flags.DEFINE_string("output", None, "Also write the medians to this JSON file.")
_SKIP_KERAS = flags.DEFINE_bool(
    "skip-keras", False, "Leave out `import keras` (seconds per round)."
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "migrate_corpus", "legacy")
IMPORT_GOAL = (1.1, 0.050)  # x bare Python, + seconds.
MIGRATE_GOAL_S = 2.0
BARE = "python -c pass"
CONTROL = "python -c pass (A/A control)"


def _cli() -> list[str]:
    script = shutil.which("parallel-keras") or os.path.join(
        os.path.dirname(sys.executable), "parallel-keras"
    )
    if os.path.exists(script):
        return [script]
    return [
        sys.executable,
        "-c",
        "import sys; from parallel_keras.cli.main import run; "
        "sys.argv[0] = 'parallel-keras'; run()",
    ]


def commands(include_keras: bool = True) -> dict[str, list[str]]:
    """Label -> argv of each timed command."""
    timed = {
        BARE: [sys.executable, "-c", "pass"],
        "import parallel_keras": [sys.executable, "-c", "import parallel_keras"],
        "parallel-keras --help": [*_cli(), "--help"],
        "parallel-keras migrate --diff (corpus)": [*_cli(), "migrate", "--diff", CORPUS],
    }
    if include_keras:
        timed["import keras"] = [sys.executable, "-c", "import keras"]
    return timed


def _time_once(argv: list[str]) -> float:
    started = time.perf_counter()
    process = subprocess.run(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited with {process.returncode}: {process.stderr[-2000:]}"
        )
    return elapsed


def measure(timed: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Seconds of each command over `runs` interleaved rounds, and of the A/A control.

    The control is bare Python a second time in each round (at the end, so
    the two bare runs are as far apart as the round allows).
    """
    rounds = {**timed, CONTROL: timed[BARE]} if BARE in timed else dict(timed)
    samples: dict[str, list[float]] = {label: [] for label in rounds}
    for argv in timed.values():  # Warm the file cache; not counted.
        _time_once(argv)
    for _ in range(runs):
        for label, argv in rounds.items():
            samples[label].append(_time_once(argv))
    return samples


def report(samples: dict[str, list[float]]) -> tuple[str, bool]:
    """The table and whether every goal was met (by the median)."""
    bare = samples[BARE]
    control = stats.paired_ratio(samples[CONTROL], bare) if CONTROL in samples else None
    import_limit = IMPORT_GOAL[0] * stats.median_interval(bare).median + IMPORT_GOAL[1]
    goals = {
        "import parallel_keras": import_limit,
        "parallel-keras --help": import_limit,
        "parallel-keras migrate --diff (corpus)": MIGRATE_GOAL_S,
    }
    lines = [f"{'command':<42} {'median [95%]':>22} {'x bare [95%]':>24}  goal"]
    met = True
    for label, values in samples.items():
        if label == CONTROL:
            continue
        median = stats.median_interval(values)
        relative = (
            "reference"
            if label == BARE
            else stats.verdict(stats.paired_ratio(values, bare), control)
        )
        goal = goals.get(label)
        verdict = ""
        if goal is not None:
            ok = median.median < goal
            met = met and ok
            verdict = f"< {goal * 1000:.0f} ms: {'met' if ok else 'MISSED'}"
        timed = f"{median.median * 1000:.0f} ms [{median.low * 1000:.0f}, {median.high * 1000:.0f}]"
        lines.append(f"{label:<42} {timed:>22} {relative:>24}  {verdict}".rstrip())
    if control is not None:
        lines.append(stats.noise_line(CONTROL, control))
    return "\n".join(lines), met


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    timed = commands(include_keras=not _SKIP_KERAS.value)
    samples = measure(timed, _RUNS.value)
    medians = {label: stats.median_interval(values).median for label, values in samples.items()}
    table, met = report(samples)
    print(f"Medians of {_RUNS.value} interleaved runs ({sys.executable}):")
    print(table)
    if _OUTPUT.value:
        with open(_OUTPUT.value, "w") as file:
            json.dump(
                {"runs": _RUNS.value, "medians_s": medians, "samples_s": samples}, file, indent=2
            )
        print(f"JSON: {_OUTPUT.value}")
    return 0 if met else 1
