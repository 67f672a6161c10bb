# SPDX-License-Identifier: Apache-2.0
"""Loading a Keras 2 `.h5` written from a multi_gpu_model, and converting it.

Keras 2 files saved from a *parallel* model (its `save_weights`, `save`, or a
`ModelCheckpoint` on it) hold the inputs, one slicing Lambda per GPU, one
group with every template weight, and the merge layers; Keras 3 cannot load
them into the template. `parallel_keras.load_legacy_weights` can: it matches
weights by name, checks every shape before assigning anything, and never runs
the Lambda bytecode stored in the file.

Run it:

    python examples/convert_legacy_h5.py

The same from the shell, for a template defined in `my_models.py`:

    parallel-keras convert old_multi_gpu.h5 --template my_models:build -o model.keras
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import parallel_keras

# Before TensorFlow (or Keras) is imported, or it cannot keep TensorFlow's
# start-up lines out.
parallel_keras.quiet_tensorflow()

import keras  # noqa: E402

from parallel_keras.testing import legacy_files  # noqa: E402


def build_template() -> keras.Model:
    """The architecture the legacy file was trained with."""
    inputs = keras.Input(shape=(6,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    outputs = keras.layers.Dense(3, activation="softmax")(hidden)
    return keras.Model(inputs, outputs)


folder = tempfile.mkdtemp(prefix="legacy_h5_")
legacy_path = os.path.join(folder, "multi_gpu_model.h5")

# Stand-in for a file an old Keras 2 run wrote from multi_gpu_model(gpus=4):
# the same HDF5 layout Keras 2.2 wrote, with known weights.
trained = build_template()
rng = np.random.default_rng(0)
trained.set_weights([rng.normal(size=w.shape).astype("float32") for w in trained.weights])
legacy_files.write_parallel_model_file(legacy_path, trained, gpus=4, full_model=True)

# 1. Load the legacy weights into a fresh template.
template = build_template()
parallel_keras.load_legacy_weights(template, legacy_path)
rows = rng.normal(size=(5, 6)).astype("float32")
np.testing.assert_allclose(
    template.predict(rows, verbose=0), trained.predict(rows, verbose=0), atol=1e-6
)
print(f"loaded {legacy_path} into the template: predictions match the trained model")

# 2. Save it as a Keras 3 file, which plain Keras loads on any machine.
keras_path = os.path.join(folder, "model.keras")
template.save(keras_path)
reloaded = keras.models.load_model(keras_path)
np.testing.assert_allclose(
    reloaded.predict(rows, verbose=0), trained.predict(rows, verbose=0), atol=1e-6
)
print(f"converted to {keras_path}")

# 3. A file that does not fit the template is refused before anything is
# assigned: the template keeps its weights.
other = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4)])
before = [w.copy() for w in other.get_weights()]
try:
    parallel_keras.load_legacy_weights(other, legacy_path)
except ValueError as error:  # the mismatch, named
    print(f"refused as expected: {str(error).splitlines()[0]}")
assert all(np.array_equal(a, b) for a, b in zip(before, other.get_weights()))
