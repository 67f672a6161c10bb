# SPDX-License-Identifier: Apache-2.0
"""Legacy `.h5` files of a model whose nested model's layer is also called directly.

Keras 2 wrote such a layer's weights twice: in the nested model's group and
in its own group. Plain Keras loads the file; so must every parallel_keras
loader (the parallel model's, the wrapped template's, `load_weights`).
"""

from __future__ import annotations

import warnings

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras.saving import legacy
from parallel_keras.testing import legacy_files

ROWS = [
    np.random.default_rng(1).normal(size=(4, 3)).astype("float32"),
    np.random.default_rng(2).normal(size=(4, 3)).astype("float32"),
]


def _model(seed, shared_name="shared"):
    keras.utils.set_random_seed(seed)
    shared = keras.layers.Dense(4, name=shared_name)
    inner_input = keras.Input((3,))
    encoder = keras.Model(
        inner_input, keras.layers.Dense(3, name="inner_head")(shared(inner_input)), name="encoder"
    )
    input_a, input_b = keras.Input((3,)), keras.Input((3,))
    merged = keras.layers.concatenate([encoder(input_a), shared(input_b)])
    return keras.Model([input_a, input_b], keras.layers.Dense(2, name="out")(merged))


def _write(path, model, writer):
    if writer == "keras2":
        legacy_files.write_single_model_file(path, model)
    elif writer == "keras2_full":
        legacy_files.write_single_model_file(path, model, full_model=True)
    else:  # Keras 3's own legacy format.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save(path)


def _load(model, path, loader):
    if loader == "load_weights":
        parallel_keras.load_weights(model, path)
    elif loader == "parallel":
        parallel_keras.multi_gpu_model(model, gpus=2).load_weights(path)
    else:  # The wrapped template's own load_weights.
        parallel_keras.multi_gpu_model(model, gpus=2)
        model.load_weights(path)


@pytest.mark.parametrize("loader", ["load_weights", "parallel", "template"])
@pytest.mark.parametrize("writer", ["keras2", "keras2_full", "keras3"])
def test_layer_in_nested_model_and_called_directly_loads(tmp_path, writer, loader):
    path = str(tmp_path / "shared.h5")
    source = _model(seed=1)
    _write(path, source, writer)
    plain, fresh = _model(seed=2), _model(seed=3)
    plain.load_weights(path)  # What plain Keras does with the file.
    _load(fresh, path, loader)
    want = np.asarray(source(ROWS))
    np.testing.assert_allclose(np.asarray(plain(ROWS)), want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fresh(ROWS)), want, atol=1e-6)


def test_the_shared_layer_is_read_once(tmp_path):
    path = str(tmp_path / "shared.h5")
    source = _model(seed=1)
    legacy_files.write_single_model_file(path, source)
    shared = {layer.name: layer for layer in legacy.read_legacy_file(path).layers}["shared"]
    assert shared.weight_names == ["kernel", "bias"]
    np.testing.assert_array_equal(shared.values[0], source.get_layer("shared").kernel.numpy())


def test_layer_name_with_a_line_break_loads(tmp_path):
    # A nested file whose names differ from the model's only in their `_N`
    # is paired by name without it; that split must accept every name Keras
    # accepts, line breaks included.
    path = str(tmp_path / "shared.h5")
    source = _model(seed=1, shared_name="shared\nlayer_1")
    legacy_files.write_single_model_file(path, source)
    assert legacy.read_legacy_file(path).nested
    fresh = _model(seed=2, shared_name="shared\nlayer_2")
    parallel_keras.load_weights(fresh, path)
    np.testing.assert_allclose(np.asarray(fresh(ROWS)), np.asarray(source(ROWS)), atol=1e-6)
