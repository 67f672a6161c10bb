# SPDX-License-Identifier: Apache-2.0
"""Keras 2 `CuDNNLSTM`/`CuDNNGRU` weights, loaded into Keras 3 `LSTM`/`GRU`.

Keras 2 trained RNNs on GPUs with `CuDNNLSTM`/`CuDNNGRU`, whose stored
weights differ from `LSTM`/`GRU`'s, and its own HDF5 loader converted them
(`keras/engine/saving.py`, `preprocess_weights_for_loading` and
`_convert_rnn_weights`, Keras 2.3). Keras 3 has no CuDNN layers (its
`LSTM`/`GRU` use cuDNN themselves), so a legacy file of such a model loads
only after the same conversion, done here with the same rules:

* The source is told by the bias shape, as Keras 2 did: `(8 * units,)` is
  a CuDNNLSTM's (input and recurrent biases of the 4 gates), `(4 * units,)`
  an LSTM's; `(6 * units,)` a CuDNNGRU's, `(2, 3 * units)` a
  `GRU(reset_after=True)`'s, `(3 * units,)` a `GRU(reset_after=False)`'s.
* Kernels, per gate (the gates keep Keras's order, i/f/c/o and z/r/h): the
  CuDNN layer handed cuDNN each gate's `(input_dim, units)` input kernel
  flattened, which cuDNN reads as a row-major `(units, input_dim)` matrix;
  the equivalent Keras kernel is that matrix transposed (Keras 2's
  `transpose_input`: `kernel.T.reshape(kernel.shape, order='F')`). Each
  gate's recurrent kernel is transposed.
* Biases: an LSTM adds the input and recurrent bias of each gate, so they
  are summed; a `GRU(reset_after=True)` keeps both, as its `(2, 3 * units)`
  bias (the recurrent bias of the candidate gate sits inside the reset
  gate's product, as in cuDNN). A `GRU(reset_after=False)` cannot express
  CuDNN weights (Keras 2 refused too).
* `Bidirectional` converts its forward and backward halves separately,
  `TimeDistributed` its inner layer; nested models are flattened to their
  layers before this runs (`legacy.py` pairs layers, not models).

The reverse direction Keras 2 also did (LSTM/GRU weights into a CuDNN
layer) has no target in Keras 3, which has no CuDNN layers.
"""

from __future__ import annotations

import keras
import numpy as np

from parallel_keras.saving import matching


class IncompatibleRNNWeights(matching.MismatchError):
    """Stored RNN weights that the target layer cannot take, as in Keras 2."""


def convert_for_layer(layer: keras.layers.Layer, values: list[np.ndarray]) -> list[np.ndarray]:
    """Stored weight values, converted for `layer` when they are CuDNN ones.

    Args:
        layer: The Keras 3 layer that receives the values.
        values: The values in the file's order.

    Returns:
        The values to assign, in the same order (unchanged unless a CuDNN
        source was recognized).

    Raises:
        IncompatibleRNNWeights: For CuDNNGRU weights and a
            `GRU(reset_after=False)` layer.
    """
    if isinstance(layer, keras.layers.Bidirectional):
        half = len(values) // 2
        if half * 2 != len(values):
            return values
        return convert_for_layer(layer.forward_layer, values[:half]) + convert_for_layer(
            layer.backward_layer, values[half:]
        )
    if isinstance(layer, keras.layers.TimeDistributed):
        return convert_for_layer(layer.layer, values)
    if len(values) != 3:
        return values  # No bias (use_bias=False): Keras 2 left these as they were.
    if isinstance(layer, keras.layers.LSTM):
        return _lstm(values)
    if isinstance(layer, keras.layers.GRU):
        return _gru(layer, values)
    return values


def _per_gate(kernel: np.ndarray, gates: int, transform) -> np.ndarray:
    return np.hstack([transform(block) for block in np.hsplit(kernel, gates)])


def _cudnn_input_kernel(block: np.ndarray) -> np.ndarray:
    # cuDNN read the flattened (input_dim, units) block as a row-major
    # (units, input_dim) matrix W (gate = W @ x); Keras computes x @ K.
    rows, columns = block.shape
    return block.reshape(columns, rows).T


def _convert_kernels(values, gates):
    kernel, recurrent_kernel, _ = (np.asarray(value) for value in values)
    return (
        _per_gate(kernel, gates, _cudnn_input_kernel),
        _per_gate(recurrent_kernel, gates, np.transpose),
    )


def _lstm(values):
    units = np.asarray(values[1]).shape[0]
    bias = np.asarray(values[2])
    if bias.shape != (8 * units,):
        return values  # An LSTM's own weights, or a mismatch reported later.
    kernel, recurrent_kernel = _convert_kernels(values, gates=4)
    input_bias, recurrent_bias = np.split(bias, 2)
    return [kernel, recurrent_kernel, input_bias + recurrent_bias]


def _gru(layer, values):
    units = np.asarray(values[1]).shape[0]
    bias = np.asarray(values[2])
    if bias.shape != (6 * units,):
        return values  # A GRU's own weights, or a mismatch reported later.
    if not getattr(layer, "reset_after", True):
        raise IncompatibleRNNWeights(
            "CuDNNGRU weights load only into a GRU with reset_after=True, "
            "which applies the reset gate after the recurrent product as "
            f"cuDNN does (Keras 2 refused the same). Received: layer "
            f"{layer.name!r} with reset_after=False. Build it as "
            "keras.layers.GRU(..., reset_after=True) (the Keras 3 default)."
        )
    kernel, recurrent_kernel = _convert_kernels(values, gates=3)
    return [kernel, recurrent_kernel, bias.reshape(2, 3 * units)]


def keras3_base_name(keras2_base: str) -> str:
    """The Keras 3 layer name base for a Keras 2 one (`cu_dnnlstm` -> `lstm`)."""
    return {"cu_dnnlstm": "lstm", "cu_dnngru": "gru"}.get(keras2_base, keras2_base)
