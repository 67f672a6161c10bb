# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras convert`: a legacy multi-GPU file to files Keras 3 loads."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import legacy_source, load_in_fresh_process, predict

from parallel_keras.testing import legacy_files

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

TEMPLATE = "parallel_keras.testing.legacy_files:functional_template"


def _convert(*args):
    return subprocess.run(
        [sys.executable, "-c", "from parallel_keras.cli.main import run; run()", "convert", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )


def test_convert_writes_weights_and_model_that_load_on_one_device(tmp_path):
    source = legacy_source("functional")
    legacy_path = str(tmp_path / "multi_gpu.h5")
    legacy_files.write_parallel_model_file(legacy_path, source, gpus=4, full_model=True)
    outputs = {}
    for suffix in (".weights.h5", ".keras"):
        out = str(tmp_path / f"converted{suffix}")
        done = _convert(legacy_path, "--template", TEMPLATE, "-o", out)
        assert done.returncode == 0, done.stderr
        assert "4 layers" in done.stdout
        outputs[suffix] = ("functional", out)
    rows = np.random.default_rng(5).normal(size=(6, 6)).astype("float32")
    # An existing output is replaced only with --overwrite.
    again = _convert(legacy_path, "--template", TEMPLATE, "-o", outputs[".keras"][1], "--overwrite")
    assert again.returncode == 0, again.stderr
    loaded = load_in_fresh_process(outputs, rows=rows)
    want = predict(source, rows)[0]
    for key, predictions in loaded.items():
        np.testing.assert_allclose(predictions[0], want, atol=1e-6, err_msg=key)


def test_convert_refuses_a_mismatching_template_and_writes_nothing(tmp_path):
    legacy_path = str(tmp_path / "multi_gpu.h5")
    legacy_files.write_parallel_model_file(legacy_path, legacy_source("sequential"))
    out = tmp_path / "converted.keras"
    done = _convert(legacy_path, "--template", TEMPLATE, "-o", str(out))
    assert done.returncode == 1
    assert "first mismatching layer" in done.stderr
    missing = _convert(str(tmp_path / "nope.h5"), "--template", TEMPLATE, "-o", str(out))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert missing.stderr.startswith("parallel-keras convert: error: ")
    assert not out.exists() and not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_skip_mismatch_flag_loads_the_layers_that_fit_and_the_error_names_it(tmp_path):
    import keras

    source = legacy_source("sequential")  # Dense(8) -> Dense(3), input (6,).
    legacy_path = str(tmp_path / "multi_gpu.h5")
    legacy_files.write_parallel_model_file(legacy_path, source)
    # The same first layer, a head of another width: only the first layer fits.
    template_file = tmp_path / "wider_head.py"
    template_file.write_text(
        "import keras\n\n\ndef build():\n"
        "    return keras.Sequential(\n"
        "        [keras.Input((6,)), keras.layers.Dense(8, activation='relu'), keras.layers.Dense(5)]\n"
        "    )\n"
    )
    out = tmp_path / "converted.weights.h5"
    refused = _convert(legacy_path, "--template", f"{template_file}:build", "-o", str(out))
    assert refused.returncode == 1
    assert "pass --skip-mismatch to load only the layers that match" in refused.stderr
    assert "skip_mismatch=True" not in refused.stderr and not out.exists()

    done = _convert(
        legacy_path, "--template", f"{template_file}:build", "-o", str(out), "--skip-mismatch"
    )
    assert done.returncode == 0, done.stderr
    assert "1 layers" in done.stdout
    converted = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(5)]
    )
    converted.load_weights(str(out))
    for got, want in zip(converted.layers[0].get_weights(), source.layers[0].get_weights()):
        np.testing.assert_array_equal(got, want)
