# SPDX-License-Identifier: Apache-2.0
"""Measures "K of N public projects run with no hand edit" with today's migrate.

    python -m tests.migrate_corpus_public.measure [--corpus DIR] [-k NAME]...

For each project of `projects.PROJECTS` whose sources are in the corpus folder
(`DIR/<name>/src`, default `$PARALLEL_KERAS_CORPUS` or /work/corpus_local):

1. copy the sources to a scratch folder and run `parallel-keras migrate
   --in-place` over all of them, as a user would (no hand edit after it);
2. run the project's entry point on 4 simulated devices through
   `harness.py train` (tiny data, argv and epoch/step caps only);
3. reload every file the run saved with plain Keras on one device
   (`harness.py load`), comparing predictions with the trained template.

A project runs when the training process exits 0, it saved at least one file
and every saved file reloads. For the others the first error (its exception
line and the project line that raised it) is the blocker. The table, the
number and each project's logs (`--keep`) are printed and written as JSON.

The sources are not in this repository: the public code they come from is
read from its repositories into the corpus folder (see `projects.py` for the
repository, commit, licence and files of each).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

if __package__:
    from .projects import PROJECTS, PublicProject
else:  # run as a file
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from projects import PROJECTS, PublicProject  # type: ignore[no-redef]

HERE = pathlib.Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
DEFAULT_CORPUS = os.environ.get("PARALLEL_KERAS_CORPUS", "/work/corpus_local")
_MIGRATE = (
    "import sys; sys.argv = ['parallel-keras', 'migrate', *sys.argv[1:]]; "
    "from parallel_keras.cli.main import run; sys.exit(run())"
)


@dataclasses.dataclass
class Outcome:
    name: str
    runs: bool
    stage: str  # "migrate", "train", "saved", "reload" or "ok"
    blocker: str
    flags: int
    seconds: float
    saved: list[str]
    detail: str = ""


def _environment(parallel_keras_root: pathlib.Path) -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=str(parallel_keras_root),
        TF_CPP_MIN_LOG_LEVEL="3",
        CUDA_VISIBLE_DEVICES="",
        MPLBACKEND="Agg",
        PYTHONHASHSEED="0",
    )


def _blocker(stderr: str, work: pathlib.Path) -> str:
    """The exception line and the deepest project line of a traceback."""
    lines = stderr.strip().splitlines()
    exception = next(
        (
            line
            for line in reversed(lines)
            if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line)
        ),
        lines[-1] if lines else "no output",
    )
    where = ""
    for index, line in enumerate(lines):
        match = re.match(r'\s*File "([^"]+)", line (\d+)', line)
        in_project = match and (
            str(work) in match.group(1) or not (match.group(1).startswith(("/", "<")))
        )
        if in_project and "harness.py" not in match.group(1):
            source = lines[index + 1].strip() if index + 1 < len(lines) else ""
            where = f"{os.path.relpath(os.path.join(work, match.group(1)), work)}:{match.group(2)}: {source}"
    return f"{exception[:300]}" + (f"  [at {where[:200]}]" if where else "")


def run_project(
    project: PublicProject,
    corpus: pathlib.Path,
    parallel_keras_root: pathlib.Path,
    keep: pathlib.Path | None = None,
    timeout: float = 600,
) -> Outcome:
    started = time.time()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"corpus_{project.name}_"))
    work = scratch / project.name
    shutil.copytree(corpus / project.name / "src", work)
    environment = _environment(parallel_keras_root)
    log: list[str] = []

    def finish(runs: bool, stage: str, blocker: str, flags: int, saved: list[str], detail=""):
        if keep is not None:
            target = keep / project.name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(work, target, ignore=shutil.ignore_patterns("*.npz"))
            (target / "_harness_log.txt").write_text("\n".join(log), encoding="utf-8")
        shutil.rmtree(scratch, ignore_errors=True)
        return Outcome(
            project.name,
            runs,
            stage,
            blocker,
            flags,
            round(time.time() - started, 1),
            saved,
            detail,
        )

    migrated = subprocess.run(
        [sys.executable, "-c", _MIGRATE, ".", "--in-place"],
        cwd=work,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    log += ["$ parallel-keras migrate . --in-place", migrated.stdout, migrated.stderr]
    summary = re.findall(r"(\d+) flagged", migrated.stdout)
    flags = int(summary[-1]) if summary else -1
    if migrated.returncode not in (0, 1):
        return finish(
            False,
            "migrate",
            f"migrate exit {migrated.returncode}: "
            f"{(migrated.stderr or migrated.stdout).strip().splitlines()[-1][:300]}",
            flags,
            [],
        )
    spec = project.harness_spec()
    (work / "_harness_spec.json").write_text(json.dumps(spec), encoding="utf-8")
    for mode in ("train", "load"):
        try:
            process = subprocess.run(
                [sys.executable, str(HERE / "harness.py"), mode, "_harness_spec.json"],
                cwd=work,
                env=environment,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            log.append(f"$ harness {mode}: timed out after {timeout} s")
            return finish(False, mode, f"timed out after {timeout} s", flags, [])
        log += [
            f"$ harness {mode} (exit {process.returncode})",
            process.stdout[-6000:],
            process.stderr[-12000:],
        ]
        if process.returncode != 0:
            stage = "train" if mode == "train" else "reload"
            return finish(False, stage, _blocker(process.stderr, work), flags, [])
        if mode == "train":
            record = json.loads((work / "_harness_train.json").read_text())
            if not record["saved"] and project.saves:
                return finish(
                    False, "saved", "trained, but saved no model or weights file", flags, []
                )
    results = json.loads((work / "_harness_load.json").read_text())
    saved = [result["path"] for result in results]
    failed = [result for result in results if not result.get("loaded")]
    if failed:
        first = failed[0]
        return finish(
            False, "reload", f"{first['path']} does not reload: {first['errors'][:2]}", flags, saved
        )
    compared = [result["compared"] for result in results if result.get("compared")]
    detail = ""
    if compared:
        detail = f"max |reloaded - trained| {min(c['max_abs_diff'] for c in compared):.2g}"
    return finish(True, "ok", "", flags, saved, detail)


def markdown_table(outcomes: list[Outcome]) -> str:
    """One row per project: repository, licence, domain, and what happened."""
    by_name = {project.name: project for project in PROJECTS}
    rows = [
        "| project | repository @ commit | licence | domain | outcome |",
        "|---|---|---|---|---|",
    ]
    for outcome in outcomes:
        project = by_name[outcome.name]
        result = "runs" if outcome.runs else f"{outcome.stage}: {outcome.blocker}"
        result = result.replace("|", "\\|")[:220]
        rows.append(
            f"| {project.name} | {project.repo} @ {project.commit[:7]} | {project.licence} "
            f"| {project.domain} | {result} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS, type=pathlib.Path)
    parser.add_argument(
        "--parallel-keras",
        default=REPOSITORY,
        type=pathlib.Path,
        help="Folder holding the parallel_keras package to migrate and run with.",
    )
    parser.add_argument(
        "-k", "--only", action="append", default=[], help="Project name (repeatable)."
    )
    parser.add_argument(
        "--keep", type=pathlib.Path, help="Keep each migrated copy and its logs here."
    )
    parser.add_argument("--json", type=pathlib.Path, help="Write the outcomes here.")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--markdown", action="store_true", help="Also print the outcomes as a Markdown table."
    )
    args = parser.parse_args(argv)
    selected = [p for p in PROJECTS if not args.only or p.name in args.only]
    missing = [p.name for p in selected if not (args.corpus / p.name / "src").is_dir()]
    present = [p for p in selected if p.name not in missing]
    outcomes = []
    for project in present:
        outcome = run_project(
            project, args.corpus, args.parallel_keras.resolve(), args.keep, args.timeout
        )
        outcomes.append(outcome)
        status = "runs" if outcome.runs else f"FAILS at {outcome.stage}"
        print(
            f"{project.name:28} {status:18} {outcome.seconds:6.1f}s flags={outcome.flags} "
            f"{outcome.blocker or outcome.detail}",
            flush=True,
        )
    runs = sum(outcome.runs for outcome in outcomes)
    print(
        f"\n{runs} of {len(outcomes)} run with no hand edit"
        + (f" ({len(missing)} not in {args.corpus}: {', '.join(missing)})" if missing else "")
    )
    if args.markdown:
        print(markdown_table(outcomes))
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
