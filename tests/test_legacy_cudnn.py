# SPDX-License-Identifier: Apache-2.0
"""Keras 2 CuDNNLSTM/CuDNNGRU weights load into LSTM/GRU, as Keras 2's loader did.

The files are written with h5py in Keras 2's layout (see
parallel_keras.testing.legacy_files), holding weights in the CuDNN layers'
format. The reference is computed here from cuDNN's gate equations on those
raw weights, independently of the conversion under test.
"""

from __future__ import annotations

import h5py
import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras.saving import matching

TIMESTEPS, FEATURES, UNITS = 5, 3, 4
GATES = {"lstm": 4, "gru": 3}
X = np.random.default_rng(7).normal(size=(2, TIMESTEPS, FEATURES)).astype("float32")


def _sigmoid(value):
    return 1.0 / (1.0 + np.exp(-value))


def _cudnn_weights(kind, seed):
    """A CuDNN layer's stored weights: kernel, recurrent_kernel, bias."""
    rng = np.random.default_rng(seed)
    gates = GATES[kind]
    return [
        rng.normal(scale=0.5, size=(FEATURES, gates * UNITS)).astype("float32"),
        rng.normal(scale=0.5, size=(UNITS, gates * UNITS)).astype("float32"),
        rng.normal(scale=0.5, size=(2 * gates * UNITS,)).astype("float32"),
    ]


def _cudnn_reference(kind, weights, x):
    """What cuDNN computed with a Keras 2 CuDNN layer's weights (all steps).

    Keras 2 passed cuDNN each gate's (input_dim, units) kernel block
    flattened; cuDNN reads it as a row-major (units, input_dim) matrix W and
    computes W @ x. Recurrent blocks R likewise: R @ h. Biases: the input
    biases of all gates, then the recurrent ones.
    """
    kernel, recurrent, bias = weights
    gates = GATES[kind]
    w = [kernel[:, g * UNITS : (g + 1) * UNITS].reshape(UNITS, FEATURES) for g in range(gates)]
    r = [recurrent[:, g * UNITS : (g + 1) * UNITS] for g in range(gates)]
    b_in = [bias[g * UNITS : (g + 1) * UNITS] for g in range(gates)]
    b_rec = [bias[(gates + g) * UNITS : (gates + g + 1) * UNITS] for g in range(gates)]
    h = np.zeros((x.shape[0], UNITS))
    c = np.zeros((x.shape[0], UNITS))
    outputs = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        pre_in = [xt @ w[g].T + b_in[g] for g in range(gates)]
        pre_rec = [h @ r[g].T + b_rec[g] for g in range(gates)]
        if kind == "lstm":  # Gates i, f, c, o.
            i, f, o = (_sigmoid(pre_in[g] + pre_rec[g]) for g in (0, 1, 3))
            c = f * c + i * np.tanh(pre_in[2] + pre_rec[2])
            h = o * np.tanh(c)
        else:  # Gates z, r, h; reset applied after the recurrent product.
            z = _sigmoid(pre_in[0] + pre_rec[0])
            reset = _sigmoid(pre_in[1] + pre_rec[1])
            candidate = np.tanh(pre_in[2] + reset * pre_rec[2])
            h = z * h + (1 - z) * candidate
        outputs.append(h)
    return np.stack(outputs, axis=1)


def _rnn(kind, **kwargs):
    layer_class = keras.layers.LSTM if kind == "lstm" else keras.layers.GRU
    return layer_class(UNITS, return_sequences=True, **kwargs)


def _template(kind, bidirectional, **kwargs):
    inputs = keras.Input((TIMESTEPS, FEATURES))
    rnn = _rnn(kind, **kwargs)
    if bidirectional:
        rnn = keras.layers.Bidirectional(rnn)
    hidden = rnn(inputs)
    return keras.Model(inputs, keras.layers.Dense(2)(hidden))


def _write_keras2_file(path, kind, bidirectional, layout, rnn_weights, dense_weights):
    """The file Keras 2 wrote for Input -> [Bidirectional(]CuDNN*[)] -> Dense."""
    cudnn = "cu_dnnlstm_1" if kind == "lstm" else "cu_dnngru_1"
    names = ["kernel", "recurrent_kernel", "bias"]
    if bidirectional:
        rnn_group = "bidirectional_1"
        rnn_entries = [
            (f"bidirectional_1/{direction}_{cudnn}/{name}:0", value)
            for direction, weights in zip(("forward", "backward"), rnn_weights)
            for name, value in zip(names, weights)
        ]
    else:
        rnn_group = cudnn
        rnn_entries = [(f"{cudnn}/{name}:0", value) for name, value in zip(names, rnn_weights[0])]
    dense_entries = [
        (f"dense_1/{name}:0", value) for name, value in zip(("kernel", "bias"), dense_weights)
    ]
    if layout == "single":
        groups = [("input_1", []), (rnn_group, rnn_entries), ("dense_1", dense_entries)]
    else:  # A multi_gpu_model parallel model: one group holds the template.
        groups = [
            ("input_1", []),
            ("lambda_1", []),
            ("lambda_2", []),
            ("model_1", rnn_entries + dense_entries),
            ("dense_1", []),
        ]
    with h5py.File(path, "w") as file:
        file.attrs["layer_names"] = [name.encode() for name, _ in groups]
        file.attrs["backend"] = b"tensorflow"
        file.attrs["keras_version"] = b"2.2.4"
        for name, entries in groups:
            group = file.create_group(name)
            group.attrs["weight_names"] = (
                [weight_name.encode() for weight_name, _ in entries] if entries else np.array([])
            )
            for weight_name, value in entries:
                group.create_dataset(weight_name, data=value)


def _rnn_output(model):
    rnn = model.layers[1]
    return np.asarray(keras.Model(model.input, rnn.output)(X))


@pytest.mark.parametrize("layout", ["single", "parallel"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["plain", "bidirectional"])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cudnn_weights_give_what_cudnn_computed(tmp_path, kind, bidirectional, layout):
    directions = 2 if bidirectional else 1
    rnn_weights = [_cudnn_weights(kind, seed) for seed in range(directions)]
    dense_in = UNITS * directions
    dense_weights = [np.full((dense_in, 2), 0.1, "float32"), np.array([0.5, -0.5], "float32")]
    path = str(tmp_path / "cudnn.h5")
    _write_keras2_file(path, kind, bidirectional, layout, rnn_weights, dense_weights)
    template = _template(kind, bidirectional)
    loaded = parallel_keras.load_legacy_weights(template, path)
    assert len(loaded) == 2
    want = _cudnn_reference(kind, rnn_weights[0], X)
    if bidirectional:
        backward = _cudnn_reference(kind, rnn_weights[1], X[:, ::-1])[:, ::-1]
        want = np.concatenate([want, backward], axis=-1)
    np.testing.assert_allclose(_rnn_output(template), want, atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(template(X)), want @ dense_weights[0] + dense_weights[1], atol=1e-5
    )


def test_cudnn_weights_load_through_the_parallel_model(tmp_path):
    rnn_weights = [_cudnn_weights("lstm", 3)]
    dense_weights = [np.full((UNITS, 2), 0.1, "float32"), np.zeros(2, "float32")]
    path = str(tmp_path / "cudnn.h5")
    _write_keras2_file(path, "lstm", False, "parallel", rnn_weights, dense_weights)
    template = _template("lstm", False)
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.load_weights(path)
    np.testing.assert_allclose(
        _rnn_output(template), _cudnn_reference("lstm", rnn_weights[0], X), atol=1e-5
    )


def test_cudnn_gru_into_gru_reset_before_is_refused_and_changes_nothing(tmp_path):
    path = str(tmp_path / "cudnn.h5")
    dense_weights = [np.zeros((UNITS, 2), "float32"), np.zeros(2, "float32")]
    _write_keras2_file(path, "gru", False, "single", [_cudnn_weights("gru", 0)], dense_weights)
    template = _template("gru", False, reset_after=False)
    before = [w.copy() for w in template.get_weights()]
    with pytest.raises(matching.MismatchError, match="reset_after=True"):
        parallel_keras.load_legacy_weights(template, path)
    for want, got in zip(before, template.get_weights()):
        np.testing.assert_array_equal(got, want)
