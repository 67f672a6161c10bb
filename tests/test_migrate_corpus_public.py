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
folder named by `$PARALLEL_KERAS_CORPUS`, one `<name>/src` per project. The
run tests run only when that variable is set (a clean clone has no sources,
and a folder that merely exists on one machine must not change what the
suite runs); a project whose own requirement (opencv, scikit-image, ...) is
not installed is skipped and says which. The catalogue test always runs.

`RUNS` holds the projects measured to run with no hand edit: each must keep
running (a regression fails here). The others are expected failures (not
strict) whose reason is the blocker measured on main; `pytest -rX` lists
the ones that started running, to move into `RUNS`.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent / "migrate_corpus_public"))

import measure  # noqa: E402
from projects import PROJECTS  # noqa: E402

# Every test here may start child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

CORPUS_VARIABLE = "PARALLEL_KERAS_CORPUS"
REPOSITORY = pathlib.Path(__file__).resolve().parents[1]

# Each measured at the commit of its last fix (docs/migrate.md, "K of N run with no hand edit").
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
    "image_inpainting",
    "minigooglenet",
    "minos",
    "deeplabv3_segmentation",
    "look_into_person",
    "pconv_inpainting",
    "cifar10_mgpu_avolkov1",
    "chexnet",
    "dsb2018_selim",
    "retinanet",
    "neurowriter",
    "crnn_ocr",
    "mdsr_superres",
    "crop_disease",
    "scene_classification",
    "deep_image_matting",
    "nuclick",
    "colorize_gan",
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
    if not os.environ.get(CORPUS_VARIABLE):
        pytest.skip(f"{CORPUS_VARIABLE} is not set (the folder holding each project's sources)")
    corpus = pathlib.Path(os.environ[CORPUS_VARIABLE])
    if not (corpus / name / "src").is_dir():
        pytest.skip(f"the sources of {project.repo} are not in {corpus}/{name}/src")
    outcome = measure.run_project(project, corpus, REPOSITORY, timeout=project.timeout)
    missing = _missing_requirement(outcome.blocker)
    if not outcome.runs and missing:
        pytest.skip(f"{name} needs {missing!r}, one of its own requirements, not installed here")
    assert outcome.runs, f"{name} stopped at {outcome.stage}: {outcome.blocker}"


def _missing_requirement(blocker: str) -> str | None:
    """The project's own top-level package when the run stopped for want of it.

    `No module named 'keras.preprocessing.text'` is migrate's failure (keras is
    installed); `No module named 'cv2'` with no cv2 anywhere is the project's
    requirement missing from this environment.
    """
    found = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", blocker or "")
    if not found:
        return None
    top = found.group(1).split(".")[0]
    return None if importlib.util.find_spec(top) is not None else top


def test_measure_reports_a_missing_corpus_folder_instead_of_counting_it(tmp_path, capsys):
    assert measure.main(["--corpus", str(tmp_path), "-k", PROJECTS[0].name]) == 0
    out = capsys.readouterr().out
    assert "0 of 0 run with no hand edit" in out
    assert f"not in {tmp_path}: {PROJECTS[0].name}" in out


def test_a_missing_project_requirement_is_told_apart_from_a_migrate_failure():
    assert _missing_requirement("ModuleNotFoundError: No module named 'cv2'  [at utils.py:3]") == (
        "cv2" if importlib.util.find_spec("cv2") is None else None
    )
    assert _missing_requirement("ModuleNotFoundError: No module named 'no_such_pkg_x.sub'") == (
        "no_such_pkg_x"
    )
    # keras is installed: a missing keras submodule is what migrate left behind.
    assert _missing_requirement("ModuleNotFoundError: No module named 'keras.engine'") is None
    assert _missing_requirement("AttributeError: module 'keras.backend' has no attribute") is None
