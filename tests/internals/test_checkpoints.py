# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.checkpoints` (Keras 3.5 to 3.15).

Each fails loudly when an upgrade changes how `keras.callbacks.ModelCheckpoint`
writes (`_save_model` after `_get_file_path`, deciding in
`_should_save_model` from Keras 3.10, inline with `self.model.save` before)
or the legacy HDF5 weights layout Keras 3 still loads.
"""

import inspect
import re

import h5py
import keras
import numpy as np

from parallel_keras import _internals
from parallel_keras._internals import checkpoints


def _keras_version() -> tuple[int, int]:
    return tuple(int(part) for part in re.findall(r"\d+", keras.__version__)[:2])


class _RecordingHook(_internals.ModelCheckpointWriteHook):
    """Records Keras's calls and the writes routed to `write_checkpoint`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []
        self.writes = []

    def _get_file_path(self, epoch, batch, logs):
        self.calls.append(("_get_file_path", epoch))
        return super()._get_file_path(epoch, batch, logs)

    def write_checkpoint(self, filepath: str, epoch: int) -> None:
        self.writes.append((filepath, epoch))


def _model() -> keras.Model:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_model_checkpoint_still_has_the_methods_the_hook_uses():
    for name in ("_save_model", "_get_file_path"):
        assert callable(getattr(keras.callbacks.ModelCheckpoint, name, None)), name


def test_the_hook_shape_is_the_one_this_keras_has():
    decides_in_a_method = _keras_version() >= (3, 10)
    assert callable(getattr(keras.callbacks.ModelCheckpoint, "_should_save_model", None)) == (
        decides_in_a_method
    )
    expected = (
        checkpoints._DecisionMethodHook if decides_in_a_method else checkpoints._InlineDecisionHook
    )
    assert _internals.ModelCheckpointWriteHook is expected
    if not decides_in_a_method:  # The inline shape answers these two calls.
        source = inspect.getsource(keras.callbacks.ModelCheckpoint._save_model)
        assert "self.model.save(filepath, overwrite=True)" in source
        assert "self.model.save_weights(filepath, overwrite=True)" in source


def test_fit_writes_through_save_model_with_keras_path_and_decision(tmp_path):
    hook = _RecordingHook(str(tmp_path / "model_{epoch}.keras"))
    x, y = np.ones((4, 2), "float32"), np.ones((4, 1), "float32")
    _model().fit(x, y, epochs=2, verbose=0, callbacks=[hook])
    assert hook.writes == [
        (str(tmp_path / "model_1.keras"), 0),
        (str(tmp_path / "model_2.keras"), 1),
    ]
    assert hook.calls == [("_get_file_path", 0), ("_get_file_path", 1)]
    assert list(tmp_path.iterdir()) == []  # Keras itself wrote nothing.


def test_save_best_only_is_decided_by_keras(tmp_path):
    hook = _RecordingHook(
        str(tmp_path / "best.keras"), monitor="loss", mode="max", save_best_only=True
    )
    x, y = np.zeros((4, 2), "float32"), np.ones((4, 1), "float32")
    _model().fit(x, y, epochs=3, verbose=0, callbacks=[hook])  # The loss falls.
    assert [epoch for _, epoch in hook.writes] == [0]
    assert list(tmp_path.iterdir()) == []


def test_legacy_h5_weights_load_in_keras_3(tmp_path):
    source, target = _model(), _model()
    source.set_weights([np.full((2, 1), 3.0, "float32"), np.full((1,), 4.0, "float32")])
    path = str(tmp_path / "weights.h5")
    with h5py.File(path, "w") as file:
        _internals.save_legacy_h5_weights(file, source)
    target.load_weights(path)
    for expected, loaded in zip(source.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(loaded, expected)


def _hdf5_contents(file) -> dict:
    """Every dataset of an open HDF5 file: path -> values."""
    contents = {}
    file.visititems(
        lambda name, item: (
            contents.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None
        )
    )
    return contents


def test_weights_image_holds_what_keras_save_weights_writes(tmp_path):
    import io

    model = _model()
    model.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), verbose=0)
    path = str(tmp_path / "keras.weights.h5")
    model.save_weights(path)
    with (
        h5py.File(path, "r") as written,
        h5py.File(io.BytesIO(_internals.keras_weights_image(model)), "r") as image,
    ):
        expected, got = _hdf5_contents(written), _hdf5_contents(image)
    assert sorted(got) == sorted(expected) and len(got) >= 4  # Layers and optimizer.
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)


def test_legacy_h5_model_to_an_in_memory_file_loads_in_keras_3(tmp_path):
    model = _model()
    model.set_weights([np.full((2, 1), 3.0, "float32"), np.full((1,), 4.0, "float32")])
    path = str(tmp_path / "model.h5")
    with h5py.File("in-memory.h5", "w", driver="core", backing_store=False) as file:
        _internals.legacy_h5_model_to(file, model, include_optimizer=True)
        file.flush()
        image = file.id.get_file_image()
    with open(path, "wb") as out:
        out.write(image)
    loaded = keras.saving.load_model(path, compile=False)  # Keras cannot revive "mse" from .h5.
    for expected, got in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(got, expected)
