# SPDX-License-Identifier: Apache-2.0
"""Files written from a parallel run load on one device; loading never lies.

Each save goes through the real path; the single-device loads run in ONE
fresh process with plain keras (no parallel_keras, no simulated devices).
"""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest
from helpers import ROWS, flat, load_in_fresh_process, targets

import parallel_keras
from parallel_keras import _internals
from parallel_keras.saving import matching as weights_lib
from parallel_keras.testing import legacy_files


def _trained_parallel(name, gpus=2, epochs=2):
    template = legacy_files.TEMPLATES[name]()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus)
    parallel.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    parallel.fit(ROWS, targets(name), batch_size=4, epochs=epochs, verbose=0)
    return template, parallel


@pytest.mark.subprocess
def test_every_save_from_template_or_parallel_loads_on_one_device(tmp_path):
    files, expected = {}, {}
    for name in legacy_files.TEMPLATES:
        template, parallel = _trained_parallel(name)
        expected[name] = flat(parallel.predict(ROWS, verbose=0))
        saves = {
            "template_keras": (template.save, "t.keras"),
            "parallel_keras": (parallel.save, "p.keras"),
            "parallel_h5": (parallel.save, "p.h5"),
            "template_weights": (template.save_weights, "t.weights.h5"),
            "parallel_weights": (parallel.save_weights, "p.weights.h5"),
            # Keras 2 scripts save weights to `.h5`; Keras 3 loads that layout.
            "parallel_legacy_weights_h5": (parallel.save_weights, "pw.h5"),
        }
        for key, (save, filename) in saves.items():
            path = str(tmp_path / f"{name}-{filename}")
            save(path)
            files[f"{name}:{key}"] = (name, path)
    loaded = load_in_fresh_process(files)
    assert sorted(loaded) == sorted(files)
    for key, predictions in loaded.items():
        want = expected[key.split(":")[0]]
        for got, ref in zip(predictions, want):
            np.testing.assert_allclose(got, ref, atol=1e-6, err_msg=key)
    # Nothing but the final files: every temporary sibling was renamed.
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]


@pytest.mark.subprocess
def test_batchnorm_replicas_agree_and_the_file_is_what_was_evaluated(tmp_path):
    # tensorflow/tensorflow#46488: per-replica moving statistics drifted
    # apart, so predict in-process and the saved file disagreed.
    template, parallel = _trained_parallel("functional", gpus=4, epochs=4)
    batchnorm = next(
        layer for layer in template.layers if isinstance(layer, keras.layers.BatchNormalization)
    )
    for variable in (batchnorm.moving_mean, batchnorm.moving_variance):
        copies = [
            np.asarray(c)
            for c in parallel.strategy.experimental_local_results(
                _internals.keras_variable_value(variable)
            )
        ]
        assert len(copies) == 4
        for copy in copies[1:]:
            np.testing.assert_array_equal(copy, copies[0])
        # Training moved them off their initial values.
        assert not np.allclose(copies[0], 0.0 if "mean" in variable.name else 1.0)
    in_process = flat(parallel.predict(ROWS, verbose=0))
    path = str(tmp_path / "bn.keras")
    parallel.save(path)
    loaded = load_in_fresh_process({"bn": ("functional", path)})["bn"]
    np.testing.assert_allclose(loaded[0], in_process[0], atol=1e-6)


def _mismatched(kind):
    if kind == "shape":  # Same layers, a different width.
        inputs = keras.Input((6,))
        hidden = keras.layers.Dense(5)(inputs)
        hidden = keras.layers.BatchNormalization()(hidden)
        hidden = keras.layers.Dense(8, activation="tanh")(hidden)
        return keras.Model(inputs, keras.layers.Dense(3)(hidden)), "(6, 5)", "(6, 8)"
    # One Dense layer more than the file has.
    model = legacy_files.functional_template()
    hidden = keras.layers.Dense(3)(model.output)
    return (
        keras.Model(model.input, keras.layers.Dense(3)(hidden)),
        "(3, 3)",
        "in the file's layer '(none)'",
    )


@pytest.mark.parametrize("suffix", [".weights.h5", ".keras", ".h5"])
@pytest.mark.parametrize("kind", ["shape", "extra_layer"])
def test_mismatch_names_first_layer_and_both_shapes_and_changes_nothing(tmp_path, suffix, kind):
    source = legacy_files.functional_template()
    path = str(tmp_path / f"source{suffix}")
    (source.save_weights if suffix == ".weights.h5" else source.save)(path)
    model, model_shape, file_shape = _mismatched(kind)
    before = [np.copy(w) for w in model.get_weights()]
    with pytest.raises(ValueError) as raised:
        parallel_keras.load_weights(model, path)
    message = str(raised.value)
    first = weights_lib.weighted_layers(model)[0 if kind == "shape" else 4]
    assert f"first mismatching layer is {first.name!r}" in message
    assert model_shape in message
    assert file_shape in message
    if kind == "extra_layer":
        assert "The model has 6 layers with weights, the file 4." in message
    for old, new in zip(before, model.get_weights()):
        np.testing.assert_array_equal(old, new)


def test_parallel_load_weights_checks_before_it_assigns(tmp_path):
    source = legacy_files.functional_template()
    path = str(tmp_path / "source.weights.h5")
    source.save_weights(path)
    model, _, _ = _mismatched("shape")
    parallel = parallel_keras.multi_gpu_model(model, gpus=2)
    before = [np.copy(w) for w in model.get_weights()]
    with pytest.raises(weights_lib.MismatchError, match=r"\(6, 5\).*\(6, 8\)"):
        parallel.load_weights(path)
    for old, new in zip(before, model.get_weights()):
        np.testing.assert_array_equal(old, new)
    # A matching file loads through the parallel model into the template.
    good = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(good, gpus=2)
    parallel.load_weights(path)
    for want, got in zip(source.get_weights(), good.get_weights()):
        np.testing.assert_array_equal(want, got)


@pytest.mark.parametrize("suffix", [".weights.h5", ".h5"])
def test_partial_load_that_matches_nothing_is_an_error(tmp_path, suffix):
    source = legacy_files.sequential_template()  # Input (6,), Dense 8, Dense 3.
    path = str(tmp_path / f"source{suffix}")
    (source.save_weights if suffix == ".weights.h5" else source.save)(path)
    other = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(4, name="x1"), keras.layers.Dense(5, name="x2")]
    )
    before = [np.copy(w) for w in other.get_weights()]
    with pytest.raises(ValueError, match="No layer of model"):
        parallel_keras.load_weights(other, path, skip_mismatch=True)
    if suffix == ".h5":  # Keras 2's by_name: no layer has a name in the file.
        with pytest.raises(ValueError, match="No layer of model"):
            parallel_keras.load_weights(other, path, by_name=True)
    for old, new in zip(before, other.get_weights()):
        np.testing.assert_array_equal(old, new)


def _write_bad_file(tmp_path, kind):
    source = legacy_files.sequential_template()
    if kind == "missing":
        return str(tmp_path / "nowhere.weights.h5"), "does not exist"
    if kind == "text":
        path = tmp_path / "notes.h5"
        path.write_text("not a model\n")
        return str(path), "neither"
    if kind == "foreign_hdf5":
        import h5py

        path = str(tmp_path / "data.h5")
        with h5py.File(path, "w") as file:
            file["table"] = np.arange(3)
        return path, "not written by Keras"
    suffix = {
        "truncated_weights": ".weights.h5",
        "truncated_keras": ".keras",
        "truncated_h5": ".h5",
    }[kind]
    whole = str(tmp_path / f"whole{suffix}")
    (source.save_weights if suffix == ".weights.h5" else source.save)(whole)
    data = open(whole, "rb").read()
    path = str(tmp_path / f"cut{suffix}")
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])
    return path, "truncated or corrupt"


@pytest.mark.parametrize(
    "kind",
    ["missing", "text", "foreign_hdf5", "truncated_weights", "truncated_keras", "truncated_h5"],
)
def test_bad_files_raise_clear_errors_and_change_nothing(tmp_path, kind):
    path, reason = _write_bad_file(tmp_path, kind)
    model = legacy_files.sequential_template()
    before = [np.copy(w) for w in model.get_weights()]
    with pytest.raises(ValueError, match=reason) as raised:
        parallel_keras.load_weights(model, path)
    assert "Received: filepath=" in str(raised.value)
    for old, new in zip(before, model.get_weights()):
        np.testing.assert_array_equal(old, new)
