# SPDX-License-Identifier: Apache-2.0
"""The migration corpus: legacy scripts, their expected rewrites, and runs.

Each script in `migrate_corpus/legacy/` is a realistic Keras 2 multi-GPU
script (the legacy tutorials' snippets with their `...` filled in, and the other
patterns `parallel-keras migrate` handles). For each one:

* the rewrite equals `migrate_corpus/expected/<name>` exactly, and
  rewriting that again changes nothing;
* the rewritten script runs to completion under TF 2.21 / Keras 3 in a
  fresh process on 4 simulated devices (the `/gpu:i` it names map to them),
  trains, and saves a file; a second fresh process with plain Keras and one
  device loads that file and predicts what the trained template predicted.
"""

from __future__ import annotations

import dataclasses
import glob
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

CORPUS = pathlib.Path(__file__).parent / "migrate_corpus"
SCRIPTS = sorted(path.name for path in (CORPUS / "legacy").glob("*.py"))


@dataclasses.dataclass(frozen=True)
class Artifact:
    """What a script saves: a glob under its working folder and the kind."""

    pattern: str
    kind: str  # "model": load_model; "weights": template from JSON + load_weights.
    template: str = "model"  # The script's global holding the template.


ARTIFACTS = {
    "01_seed000_data_parallel.py": Artifact("model/latest.weights.h5", "weights"),
    "02_seed000_device_parallel.py": Artifact("shared_lstm.h5", "model"),
    "03_seed001_single_gpu_weights.py": Artifact("single_gpu_model.h5", "model"),
    "04_seed002_parallel_checkpoint.py": Artifact("vgg-01-*.h5", "model"),
    "05_seed003_template_on_cpu.py": Artifact("my_model.h5", "model"),
    "06_seed004_device_scope.py": Artifact("tweets.weights.h5", "weights"),
    "07_alt_checkpoint_generators.py": Artifact("alt_model.h5", "model"),
    "08_model_mgpu_period.py": Artifact("weights.01.weights.h5", "weights"),
    "09_tf_keras_savedmodel.py": Artifact("exported_model.keras", "model"),
    # Seeds with the usual surroundings: CUDA_VISIBLE_DEVICES before
    # the imports, TensorBoard, metric names in checkpoint paths, history plots.
    "10_seed002_unet_checkpoint_history.py": Artifact("unet-02-*.h5", "model"),
    "11_seed003_sequence_gpu_count.py": Artifact("sequence_model.weights.h5", "weights"),
    "12_seed000_backend_loss.py": Artifact("classifier.h5", "model"),
}

_TRAIN = """
import os, runpy, sys
import numpy as np
import parallel_keras
parallel_keras.simulate_devices(4)
namespace = runpy.run_path(sys.argv[1], run_name="__main__")
template = namespace[sys.argv[2]]
rng = np.random.default_rng(0)
probe = [rng.random((4,) + tuple(t.shape[1:])).astype("float32") for t in template.inputs]
np.savez("_probe.npz", *probe)
np.save("_expected.npy", template.predict(probe if len(probe) > 1 else probe[0], verbose=0))
with open("_template.json", "w") as file:
    file.write(template.to_json())
"""

_LOAD = """
import json, sys
import numpy as np
import keras
path, kind = sys.argv[1], sys.argv[2]
if kind == "model":
    loaded = keras.models.load_model(path, compile=False)
else:
    with open("_template.json") as file:
        loaded = keras.models.model_from_json(file.read())
    loaded.load_weights(path)
probe = list(np.load("_probe.npz").values())
got = loaded.predict(probe if len(probe) > 1 else probe[0], verbose=0)
np.save("_loaded.npy", got)
"""


def _run(code: str, args: list[str], cwd: str, timeout: float = 240):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
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
        f"\n--- stderr ---\n{process.stderr[-6000:]}"
    )
    return process


def test_corpus_covers_every_script():
    assert len(SCRIPTS) >= 8
    assert sorted(ARTIFACTS) == SCRIPTS
    assert sorted(path.name for path in (CORPUS / "expected").glob("*.py")) == SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_rewrite_matches_expected_and_is_idempotent(name):
    source = (CORPUS / "legacy" / name).read_text(encoding="utf-8")
    expected = (CORPUS / "expected" / name).read_text(encoding="utf-8")
    result = migrate.migrate_source(source, name)
    assert result.migrated == expected
    assert result.report.changes, "every corpus script needs at least one rewrite"
    again = migrate.migrate_source(result.migrated, name)
    assert again.migrated == result.migrated
    assert not again.report.changes


@pytest.mark.parametrize("name", SCRIPTS)
def test_rewritten_script_trains_and_saves_a_file_one_device_loads(name, tmp_path):
    artifact = ARTIFACTS[name]
    script = tmp_path / name
    script.write_text(
        migrate.migrate_source((CORPUS / "legacy" / name).read_text(encoding="utf-8")).migrated,
        encoding="utf-8",
    )
    _run(_TRAIN, [str(script), artifact.template], cwd=str(tmp_path))
    saved = sorted(glob.glob(str(tmp_path / artifact.pattern)))
    assert saved, f"{name} saved no {artifact.pattern}; files: {os.listdir(tmp_path)}"
    _run(_LOAD, [saved[-1], artifact.kind], cwd=str(tmp_path))
    expected = np.load(tmp_path / "_expected.npy")
    loaded = np.load(tmp_path / "_loaded.npy")
    np.testing.assert_allclose(loaded, expected, atol=1e-5)
