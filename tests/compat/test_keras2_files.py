# SPDX-License-Identifier: Apache-2.0
"""compat.save_model / load_model: Keras 2's whole-model HDF5 file at any path, and back."""

from __future__ import annotations

import h5py
import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras import compat


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")])
    model.compile(optimizer="sgd", loss="mean_squared_error")
    return model


def test_save_model_writes_keras2_hdf5_at_a_suffix_less_path_and_load_model_reads_it(tmp_path):
    model = _model()
    path = str(tmp_path / "model_loss0.123456")  # neurowriter's loss2modelname
    compat.save_model(model, path)
    assert h5py.is_hdf5(path) and not list(tmp_path.glob("*.keras"))
    with h5py.File(path, "r") as file:
        assert "model_config" in file.attrs  # Keras 2's whole-model layout
    loaded = compat.load_model(path)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_save_model_of_a_parallel_model_saves_its_template(tmp_path):
    template = _model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    path = str(tmp_path / "best")
    compat.save_model(parallel, path)
    loaded = compat.load_model(path, compile=False)
    assert [w.shape for w in loaded.weights] == [w.shape for w in template.weights]
    np.testing.assert_array_equal(loaded.get_weights()[0], template.get_weights()[0])


def test_load_weights_finds_the_file_a_checkpoint_wrote_for_a_suffix_less_path(tmp_path):
    """neurowriter: ModelCheckpoint(NamedTemporaryFile().name, save_weights_only=True),
    then model.load_weights(the same name): the checkpoint wrote name + '.weights.h5'."""
    model = _model()
    name = tmp_path / "tmpabc123"
    name.write_bytes(b"")  # NamedTemporaryFile's empty file
    checkpoint = parallel_keras.callbacks.ModelCheckpoint(str(name), save_weights_only=True)
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
    model.fit(x, y, epochs=1, verbose=0, callbacks=[checkpoint])
    trained = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in trained])
    compat.load_weights(model, str(name))
    for got, want in zip(model.get_weights(), trained):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["model.00-0.1234.hdf5", "model.h5", "model_loss0.12"])
@pytest.mark.parametrize("parallel", [False, True], ids=["plain", "parallel"])
def test_an_hdf5_save_into_a_missing_folder_creates_it_as_keras_does(tmp_path, name, parallel):
    # foamliu's projects save `'models/' + 'model.%02d-%.4f.hdf5' % ...` from
    # their own callback without creating `models/`: tf.keras 2's and
    # Keras 3's HDF5 writers create the folder (Keras 3: `model.save` too).
    model = _model()
    saved = parallel_keras.multi_gpu_model(model, gpus=2) if parallel else model
    path = tmp_path / "models" / "run1" / name
    compat.save_model(saved, str(path))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(
        compat.load_model(str(path)).predict(x, verbose=0), model.predict(x, verbose=0)
    )
    if path.suffix in (".h5", ".hdf5"):
        other = tmp_path / "other" / name
        saved.save(str(other))  # the model's own save: as Keras 3's does
        assert h5py.is_hdf5(other)


def test_a_save_under_a_regular_file_still_names_it(tmp_path):
    (tmp_path / "models").write_text("not a folder")
    with pytest.raises(ValueError, match="is a regular file"):
        compat.save_model(_model(), str(tmp_path / "models" / "m.hdf5"))
    with pytest.raises(ValueError, match="is a regular file"):
        compat.save_model(_model(), str(tmp_path / "models" / "m_loss0.1"))
    assert (tmp_path / "models").read_text() == "not a folder"
