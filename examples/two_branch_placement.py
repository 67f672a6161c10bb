# SPDX-License-Identifier: Apache-2.0
"""Two branches of one model on two devices, with placement that takes effect.

Keras 2 scripts placed branches with `tf.device` around layer calls. Keras 3
drops those scopes when the model runs; `parallel_keras.device` is the same
code with placement that is kept: in eager calls, `fit`, `predict`, and
through `.keras` save and load.

Run it:

    python examples/two_branch_placement.py

Without a GPU, `/gpu:i` runs on simulated CPU device i, and the script shows
where the ops really ran.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import parallel_keras

# Before TensorFlow (or Keras) is imported, or it cannot keep TensorFlow's
# start-up lines out.
parallel_keras.quiet_tensorflow()
parallel_keras.simulate_devices(2)  # no GPU here: /gpu:0 and /gpu:1 are simulated

import keras  # noqa: E402

from parallel_keras.testing import record_op_devices  # noqa: E402

# Two inputs, each encoded on its own device by one shared LSTM, merged on
# the CPU: the Keras 2 "shared layers on two GPUs" example.
input_a = keras.Input(shape=(20, 16), name="a")
input_b = keras.Input(shape=(20, 16), name="b")
shared_lstm = keras.layers.LSTM(32, name="shared_lstm")
with parallel_keras.device("/gpu:0"):  # was: with tf.device('/gpu:0'):
    encoded_a = shared_lstm(input_a)
with parallel_keras.device("/gpu:1"):
    encoded_b = shared_lstm(input_b)
with parallel_keras.device("/cpu:0"):
    merged = keras.layers.concatenate([encoded_a, encoded_b], axis=-1)
output = keras.layers.Dense(1, activation="sigmoid", name="score")(merged)
model = keras.Model(inputs=[input_a, input_b], outputs=output)

# The device each layer call asked for.
for call in parallel_keras.placement(model):
    print(f"{call.layer:>12} (call {call.call_index}) -> {call.device}")

rng = np.random.default_rng(0)
x_a = rng.normal(size=(64, 20, 16)).astype("float32")
x_b = rng.normal(size=(64, 20, 16)).astype("float32")
y = rng.integers(0, 2, size=(64, 1)).astype("float32")
model.compile(optimizer="adam", loss="binary_crossentropy")
model.fit([x_a, x_b], y, batch_size=16, epochs=1, verbose=2)

# Where the ops of one call really ran, counted per device.
with record_op_devices() as ops:
    model([x_a[:4], x_b[:4]])
print("ops per device:", dict(ops.device_counts(traced=False)))

# The placement is saved with the model and comes back on load.
path = os.path.join(tempfile.mkdtemp(prefix="placement_"), "two_branch.keras")
model.save(path)
reloaded = keras.models.load_model(path)
assert [c.device for c in parallel_keras.placement(reloaded)] == [
    c.device for c in parallel_keras.placement(model)
]
print(f"saved and reloaded with its placement: {path}")
