# SPDX-License-Identifier: Apache-2.0
"""Whole legacy training projects, migrated and run.

`migrate_corpus_real/legacy/<project>/` holds a Keras 2 multi-GPU training
project written in the style of public training repositories (argparse
entry points, model modules imported from the same folder, data generators,
checkpoint callbacks, TF1 session set-up, multi-output models, `by_name`
loads, the template reached by index). For each project:

* every file's rewrite equals `migrate_corpus_real/expected/<project>/...`;
  a second run changes nothing and reports the same items for a person;
* the rewritten project, with no hand edit, runs in a fresh process on 4
  simulated devices with tiny synthetic data, trains, and saves a file; a
  second fresh process with plain Keras and one device loads that file and
  predicts what the trained template predicted (atol 1e-5).

The harness replaces only data loading (`keras.datasets.*.load_data`, files
the script reads, written before it starts) and pretrained-weight files; it
records, without changing them, the models `fit`/`train_on_batch` train, to
know which template to compare.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from parallel_keras import migrate

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

CORPUS = pathlib.Path(__file__).parent / "migrate_corpus_real"
PROJECTS = sorted(path.name for path in (CORPUS / "legacy").iterdir() if path.is_dir())


@dataclasses.dataclass(frozen=True)
class Project:
    """How to run one project and what it saves.

    Args:
        argv: Command line after the script (tiny sizes).
        artifact: Glob, under the working folder, of the file to load.
        kind: "model" (load_model) or "weights" (template JSON + load_weights).
        entry: Script path in the project, or `-m package.module`.
        setup: Python run first in the training process (data files,
            pretrained weights), with the project folder importable.
        xfail: Why the run fails for a reason outside migrate (an open
            issue), or "" when it must pass.
        load_setup: Python run first in the loading process, with the
            project folder importable: what the project's own loading code
            imports (its custom layers), leaving `custom_objects` defined.
    """

    argv: tuple[str, ...]
    artifact: str
    kind: str = "model"
    entry: str = "train.py"
    setup: str = ""
    xfail: str = ""
    load_setup: str = ""


_IMAGES = """
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for split, count in (("train", 8), ("validation", 4)):
    for label in ("cats", "dogs"):
        os.makedirs(os.path.join("data", split, label), exist_ok=True)
        for i in range(count):
            pixels = rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join("data", split, label, f"{i}.png"))
"""

_TABLES = """
rng = np.random.default_rng(0)
os.makedirs("data", exist_ok=True)
for split, rows in (("train", 32), ("valid", 16)):
    x = rng.random((rows, 5)).astype("float32")
    np.savez(os.path.join("data", split + ".npz"), x=x, y=x.sum(axis=1, keepdims=True))
"""

# A pretext model with the classifier's layer names, in Keras 2's .h5 layout:
# what the script would have downloaded.
_PRETRAINED = """
import keras
from parallel_keras.saving import atomic
import encoders
image = keras.Input((16, 16, 1))
pretext = keras.Model(image, keras.layers.Dense(4, name="pretext_head")(
    encoders.feature_extractor(image)))
os.makedirs("weights", exist_ok=True)
atomic.save_weights(pretext, "weights/pretext_weights.h5")
"""

PROJECTS_SPEC = {
    "cifar10_resnet": Project(
        ("--epochs", "2", "--batch-size", "4", "--depth", "8", "--save-dir", "out"),
        "out/cifar10_final.h5",
    ),
    "mnist_keras1": Project(
        (
            "--epochs",
            "1",
        ),
        "mnist_mlp.weights.h5",
        "weights",
    ),
    "siamese_pairs": Project(("--epochs", "1", "--steps", "2"), "checkpoints/siamese-*.h5"),
    "unet_sequence": Project(("--epochs", "1", "--batch", "8"), "unet_best.h5"),
    "text_lstm": Project(("--epochs", "1", "--maxlen", "12"), "lstm.01.weights.h5", "weights"),
    "multi_output_faces": Project(
        ("--batch_size", "8", "--nb_epochs", "1"), "checkpoints/age_gender.h5"
    ),
    "multitask_two_inputs": Project(
        ("--epochs", "1", "--batch-size", "8"), "snapshots/multitask_final.h5"
    ),
    "flow_from_directory": Project((), "first_try.h5", entry="finetune.py", setup=_IMAGES),
    "pretrained_by_name": Project(
        ("--epochs", "2"),
        "weights/finetuned-02-*.hdf5",
        "weights",
        entry="finetune.py",
        setup=_PRETRAINED,
    ),
    "train_on_batch_loop": Project(
        ("--iterations", "3", "--batch-size", "8"), "generator_3.weights.h5", "weights"
    ),
    "cpu_template_plateau": Project(("--epochs", "1"), "xception_best.h5"),
    "optimizer_factory": Project(("--epochs", "1", "--optimizer", "adam"), "classifier.h5"),
    "trainer_package": Project(
        ("--num-epochs", "1", "--batch-size", "16"), "job/keras_export.h5", entry="-m trainer.task"
    ),
    "keras_tf_backend": Project(
        (
            "--epochs",
            "2",
        ),
        "ckpt/regressor_best.model.keras",
        setup=_TABLES,
    ),
    # Kinds of training scripts beyond classifiers.
    "gan_train_on_batch": Project(
        ("--iterations", "2", "--batch-size", "8", "--gpus", "4", "--save-dir", "out"),
        "out/gan_2.weights.h5",
        "weights",
    ),
    "vae_sampling": Project(
        ("--epochs", "1", "--batch-size", "8", "--gpus", "4"),
        "vae_mlp_mnist.weights.h5",
        "weights",
        load_setup="from vae import Sampling\ncustom_objects = {'Sampling': Sampling}",
    ),
    "ctc_speech": Project(
        ("--epochs", "1", "--minibatch-size", "8", "--steps", "2", "--gpus", "4"),
        "ctc_weights/weights*.weights.h5",
        "weights",
        load_setup="from model import ctc_lambda_func\n"
        "custom_objects = {'ctc_lambda_func': ctc_lambda_func}",
    ),
    "text_attention": Project(
        (
            "--maxlen",
            "12",
            "--max-features",
            "50",
            "--batch-size",
            "8",
            "--epochs",
            "1",
            "--gpus",
            "4",
        ),
        "attention_lstm.h5",
        load_setup="from attention import Attention\ncustom_objects = {'Attention': Attention}",
    ),
    "superres_sequence": Project(
        ("--epochs", "1", "--batch-size", "8", "--gpus", "4"), "srcnn_x2.weights.h5", "weights"
    ),
    "detection_focal": Project(
        ("--epochs", "1", "--batch-size", "8", "--gpus", "4"), "retinanet_final.h5"
    ),
}

_TRAIN = """
import json, os, runpy, sys
import numpy as np
import parallel_keras
parallel_keras.simulate_devices(4)
import keras

spec = json.loads(sys.argv[1])
rng = np.random.default_rng(0)


def _images(shape, classes, train=32, test=16):
    def split(rows):
        x = rng.integers(0, 255, (rows,) + shape, dtype=np.uint8)
        y = rng.integers(0, classes, (rows, 1), dtype=np.uint8)
        return x, (y if len(shape) == 3 else y[:, 0])
    return split(train), split(test)


def _sequences(path=None, num_words=None, **kwargs):
    def split(rows):
        x = np.array([list(rng.integers(1, 50, rng.integers(5, 20))) for _ in range(rows)],
                     dtype=object)
        return x, rng.integers(0, 2, rows)
    return split(32), split(16)


# Data loading: tiny synthetic arrays instead of downloads.
keras.datasets.cifar10.load_data = lambda: _images((32, 32, 3), 10)
keras.datasets.mnist.load_data = lambda path="mnist.npz": _images((28, 28), 10)
keras.datasets.imdb.load_data = _sequences

# Observation only: remember which models were trained.
trained = []
import parallel_keras
for owner in (keras.Model, parallel_keras.ParallelModel):
    for method in ("fit", "train_on_batch"):
        def observed(self, *args, __original=getattr(owner, method), **kwargs):
            trained.append(self)
            return __original(self, *args, **kwargs)
        setattr(owner, method, observed)

project = os.getcwd()
sys.path.insert(0, project)
exec(spec["setup"])
entry = spec["entry"]
if entry.startswith("-m "):
    sys.argv = [entry[3:]] + spec["argv"]
    runpy.run_module(entry[3:], run_name="__main__", alter_sys=True)
else:
    sys.argv = [entry] + spec["argv"]
    runpy.run_path(entry, run_name="__main__")

template = getattr(trained[-1], "template", trained[-1])
probe = []
for tensor in template.inputs:
    # Variable-length axes (speech frames, text) get 8 steps.
    shape = (4,) + tuple(8 if size is None else size for size in tensor.shape[1:])
    if "int" in str(tensor.dtype):
        probe.append(rng.integers(0, 10, shape).astype(str(tensor.dtype)))
    else:
        probe.append(rng.random(shape).astype("float32"))
np.savez("_probe.npz", *probe)
predictions = template.predict(probe if len(probe) > 1 else probe[0], verbose=0)
np.savez("_expected.npz", *keras.tree.flatten(predictions))
with open("_template.json", "w") as file:
    file.write(template.to_json())
"""

_LOAD = """
import os, sys
import numpy as np
import keras
path, kind = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.getcwd())
custom_objects = None
exec(sys.argv[3])  # The project's own imports for loading (custom layers).
if kind == "model":
    loaded = keras.models.load_model(path, compile=False, custom_objects=custom_objects)
else:
    with open("_template.json") as file:
        loaded = keras.models.model_from_json(file.read(), custom_objects=custom_objects)
    loaded.load_weights(path)
probe = list(np.load("_probe.npz").values())
got = loaded.predict(probe if len(probe) > 1 else probe[0], verbose=0)
np.savez("_loaded.npz", *keras.tree.flatten(got))
"""


def _run(code: str, args: list[str], cwd: str, timeout: float = 400):
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
    )
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert process.returncode == 0, (
        f"exit {process.returncode}\n--- stdout ---\n{process.stdout[-4000:]}"
        f"\n--- stderr ---\n{process.stderr[-8000:]}"
    )
    return process


def _files(root: pathlib.Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.py"))


def _migrated(project: str) -> dict[str, migrate.MigrationResult]:
    root = CORPUS / "legacy" / project
    return {
        name: migrate.migrate_source((root / name).read_text(encoding="utf-8"), name)
        for name in _files(root)
    }


def test_corpus_has_a_spec_and_expected_text_for_every_project():
    assert len(PROJECTS) >= 12
    assert sorted(PROJECTS_SPEC) == PROJECTS
    for project in PROJECTS:
        assert _files(CORPUS / "expected" / project) == _files(CORPUS / "legacy" / project)


@pytest.mark.parametrize("project", PROJECTS)
def test_rewrite_matches_expected_and_a_second_run_agrees(project):
    for name, result in _migrated(project).items():
        expected = (CORPUS / "expected" / project / name).read_text(encoding="utf-8")
        assert result.migrated == expected, name
        again = migrate.migrate_source(result.migrated, name)
        assert again.migrated == result.migrated, name
        assert not again.report.changes, name
        # What still needs a person is reported again, so --strict keeps failing.
        assert [" ".join(f.action.split()) for f in again.report.flags] == [
            " ".join(f.action.split()) for f in result.report.flags
        ], name


def _run_params():
    for project in PROJECTS:
        reason = PROJECTS_SPEC[project].xfail if project in PROJECTS_SPEC else ""
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(project, marks=marks)


# A list, not the generator: parametrize takes a Collection (pytest deprecates other iterables).
@pytest.mark.parametrize("project", list(_run_params()))
def test_migrated_project_trains_and_saves_a_file_one_device_loads(project, tmp_path):
    spec = PROJECTS_SPEC[project]
    work = tmp_path / project
    for name, result in _migrated(project).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(result.migrated, encoding="utf-8")
    arguments = {"argv": list(spec.argv), "entry": spec.entry, "setup": spec.setup}
    _run(_TRAIN, [json.dumps(arguments)], cwd=str(work))
    saved = sorted(glob.glob(str(work / spec.artifact)))
    assert saved, f"{project} saved no {spec.artifact}; files: {sorted(os.listdir(work))}"
    _run(_LOAD, [saved[-1], spec.kind, spec.load_setup], cwd=str(work))
    expected = list(np.load(work / "_expected.npz").values())
    loaded = list(np.load(work / "_loaded.npz").values())
    assert len(loaded) == len(expected)
    for got, want in zip(loaded, expected):
        np.testing.assert_allclose(got, want, atol=1e-5)
