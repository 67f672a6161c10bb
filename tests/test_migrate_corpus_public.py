# SPDX-License-Identifier: Apache-2.0
"""Real public Keras 2-era multi-GPU projects, migrated and run (issue 28).

`migrate_corpus_public/projects.py` lists 30+ public projects (repository,
commit, licence, domain, multi-GPU idiom) and each one's harness: argv, tiny
data at the paths it reads, epoch/step caps. `measure.py` migrates a copy of
each with `parallel-keras migrate --in-place`, runs it on 4 simulated devices
and reloads every file it saved with plain Keras on one device; it prints
"K of N run with no hand edit":

    python -m tests.migrate_corpus_public.measure

The projects' own code is not in this repository (the code search it was
found with lets it be read and run, not committed): it lives in the corpus
folder, `$PARALLEL_KERAS_CORPUS` (default /work/corpus_local), one
`<name>/src` per project. Without that folder the run tests are skipped and
say so; the catalogue test always runs.

`RUNS` holds the projects measured to run with no hand edit: each must keep
running (a regression fails here). The others are expected failures (not
strict) whose reason is the blocker measured on main; `pytest -rX` lists
the ones that started running, to move into `RUNS`.
"""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent / "migrate_corpus_public"))

import measure  # noqa: E402
from projects import PROJECTS  # noqa: E402

# Every test here may start child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

CORPUS = pathlib.Path(measure.DEFAULT_CORPUS)
REPOSITORY = pathlib.Path(__file__).resolve().parents[1]

# Measured with main at b565258 (see docs/migrate.md, "K of N run with no hand edit").
RUNS: tuple[str, ...] = (
    "image_captioning",
    "colorful_colorization",
    "mnist_make_parallel",
    "eyenet",
    "vae_mgpu_avolkov1",
    "cifar10_kuza55_rossum",
    "data_parallel_mnist_rossum",
    "fundus_lesion",
    "scene_understanding",
    "keras_yolo3",
    "textgenrnn",
)


def test_catalogue_names_30_public_projects_with_commit_licence_and_idiom():
    names = [project.name for project in PROJECTS]
    assert len(names) >= 30
    assert len(set(names)) == len(names)
    assert len({project.domain.split(" (")[0] for project in PROJECTS}) >= 12
    for project in PROJECTS:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", project.repo), project.name
        assert re.fullmatch(r"[0-9a-f]{40}", project.commit), project.name
        assert project.licence, project.name
        assert project.idiom and project.files, project.name
        assert bool(project.entry) != bool(project.driver), project.name
    assert set(RUNS) <= set(names)


def _run_params():
    for project in PROJECTS:
        if project.name in RUNS:
            yield pytest.param(project.name)
        else:
            reason = f"blocked on main: {project.blocked_on}" if project.blocked_on else "blocked"
            yield pytest.param(project.name, marks=pytest.mark.xfail(strict=False, reason=reason))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_run_params()))
def test_project_runs_as_migrated_and_its_files_reload_on_one_device(name):
    project = next(project for project in PROJECTS if project.name == name)
    if not (CORPUS / name / "src").is_dir():
        pytest.skip(
            f"the sources of {project.repo} are not in {CORPUS} (set PARALLEL_KERAS_CORPUS)"
        )
    outcome = measure.run_project(project, CORPUS, REPOSITORY, timeout=600)
    assert outcome.runs, f"{name} stopped at {outcome.stage}: {outcome.blocker}"


def test_measure_reports_a_missing_corpus_folder_instead_of_counting_it(tmp_path, capsys):
    assert measure.main(["--corpus", str(tmp_path), "-k", PROJECTS[0].name]) == 0
    out = capsys.readouterr().out
    assert "0 of 0 run with no hand edit" in out
    assert f"not in {tmp_path}: {PROJECTS[0].name}" in out
