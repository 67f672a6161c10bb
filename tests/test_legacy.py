# SPDX-License-Identifier: Apache-2.0
"""Keras 2 HDF5 files (single and multi_gpu_model parallel) load by name.

Fixtures come from parallel_keras.testing.legacy_files, whose docstring
says how each mirrors the layout Keras 2.2 wrote.
"""

from __future__ import annotations

import marshal
import pickle

import keras
import numpy as np
import pytest
from helpers import legacy_source as _source

import parallel_keras
from parallel_keras.saving import legacy
from parallel_keras.testing import legacy_files

ROWS = np.random.default_rng(5).normal(size=(6, 6)).astype("float32")


def _predict(model):
    return [np.asarray(p) for p in keras.tree.flatten(model(ROWS, training=False))]


@pytest.mark.parametrize("full_model", [False, True])
@pytest.mark.parametrize("writer", ["parallel_2", "parallel_4", "single"])
@pytest.mark.parametrize("name", list(legacy_files.TEMPLATES))
def test_legacy_file_loads_into_fresh_template(tmp_path, name, writer, full_model):
    source = _source(name)
    path = str(tmp_path / "legacy.h5")
    if writer == "single":
        legacy_files.write_single_model_file(path, source, full_model=full_model)
    else:
        legacy_files.write_parallel_model_file(
            path, source, gpus=int(writer[-1]), full_model=full_model
        )
    template = legacy_files.TEMPLATES[name]()
    loaded = parallel_keras.load_legacy_weights(template, path)
    assert len(loaded) == len([layer for layer in template.layers if layer.weights])
    for want, got in zip(source.get_weights(), template.get_weights()):
        np.testing.assert_array_equal(want, got)
    for want, got in zip(_predict(source), _predict(template)):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_parallel_file_lists_frozen_and_moving_weights_last(tmp_path):
    # Why position cannot be trusted: Keras 2 stored the template's weights
    # trainable first, so the frozen Dense comes after the head.
    path = str(tmp_path / "legacy.h5")
    legacy_files.write_parallel_model_file(path, _source("functional"))
    stored = legacy.read_legacy_file(path)
    assert stored.nested
    assert [layer.name for layer in stored.layers] == [
        "dense_1",
        "batch_normalization_1",
        "dense_3",
        "dense_2",
    ]
    template = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.load_weights(path)  # A parallel model loads into its template.
    frozen = template.layers[4]
    assert not frozen.trainable
    np.testing.assert_array_equal(frozen.kernel.numpy(), stored.layers[3].values[0])


def test_code_stored_in_the_file_is_never_evaluated(tmp_path, monkeypatch):
    ran = tmp_path / "ran"

    def payload(data, i, parts):  # What a hostile Lambda could carry.
        open(ran, "w").close()

    path = str(tmp_path / "legacy.h5")
    legacy_files.write_parallel_model_file(
        path, _source("sequential"), full_model=True, lambda_function=payload
    )
    calls = []
    for module, attribute in [
        (marshal, "loads"),
        (pickle, "loads"),
        (keras.models, "model_from_json"),
        (keras.saving, "deserialize_keras_object"),
    ]:
        monkeypatch.setattr(module, attribute, lambda *a, **k: calls.append(a))
    template = legacy_files.sequential_template()
    parallel_keras.load_legacy_weights(template, path)
    assert not calls and not ran.exists()


def test_template_mismatch_is_clear_and_changes_nothing(tmp_path):
    path = str(tmp_path / "legacy.h5")
    legacy_files.write_parallel_model_file(path, _source("functional"))
    wrong = legacy_files.sequential_template()
    before = [np.copy(w) for w in wrong.get_weights()]
    with pytest.raises(
        ValueError, match=r"first mismatching layer is .*\(8, 3\).*\(8, 8\)"
    ) as raised:
        parallel_keras.load_legacy_weights(wrong, path)
    assert "Received: filepath=" in str(raised.value)
    for old, new in zip(before, wrong.get_weights()):
        np.testing.assert_array_equal(old, new)
    with pytest.raises(ValueError, match="No layer of model"):
        parallel_keras.load_legacy_weights(wrong, path, by_name=True)


def test_keras3_files_are_refused_with_the_right_loader(tmp_path):
    path = str(tmp_path / "new.weights.h5")
    legacy_files.sequential_template().save_weights(path)
    with pytest.raises(ValueError, match="parallel_keras.load_weights"):
        parallel_keras.load_legacy_weights(legacy_files.sequential_template(), path)
