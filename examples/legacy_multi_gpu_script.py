# SPDX-License-Identifier: Apache-2.0
"""A Keras 2 multi-GPU training script, running on Keras 3 with one import changed.

This is the shape of the scripts `keras.utils.multi_gpu_model` was written
for: the template is built on the CPU, replicated over the GPUs, trained
with a checkpoint callback that saves every `period` epochs, and saved
through the template so the file loads on a machine with one device.

Run it:

    python examples/legacy_multi_gpu_script.py            # 4 replicas (--gpus 4)
    python examples/legacy_multi_gpu_script.py --gpus 2   # 2 replicas

On a machine with GPUs, replica i runs on GPU i. Without a GPU, the script
simulates as many CPU devices as replicas (`simulate_devices(args.gpus)`
below), so it runs anywhere. A Keras 2 script you do not want to edit gets
the same from the environment: `PARALLEL_KERAS_SIMULATE_DEVICES=4 python
train.py`.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import parallel_keras

# Before TensorFlow (or Keras) is imported: keeps its C++ start-up lines
# out. Called after that import it cannot, and says so.
parallel_keras.quiet_tensorflow()

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--gpus", type=int, default=4, help="Replicas. (default: 4)")
parser.add_argument("--epochs", type=int, default=2, help="Epochs. (default: 2)")
parser.add_argument("--output-dir", default=None, help="Where the model is saved.")
args = parser.parse_args()

# Simulated devices must be configured before TensorFlow touches its devices:
# this is the first thing the script does with TensorFlow. On a machine with
# GPUs the replicas use the GPUs, whatever this line does to the CPU.
parallel_keras.simulate_devices(args.gpus)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

# The one changed line. In Keras 2 it read:
#   from keras.utils import multi_gpu_model
from parallel_keras import multi_gpu_model  # noqa: E402
from parallel_keras.callbacks import ModelCheckpoint  # noqa: E402  (Keras 2 signature: `period`)

output_dir = args.output_dir or tempfile.mkdtemp(prefix="legacy_script_")

# Keras 2's advice: build the template under the CPU's scope so its weights
# live in host memory. Here, as in Keras 2, only the variables are placed
# there; each replica still computes on its own device.
with tf.device("/cpu:0"):
    template = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ],
        name="template",
    )

parallel_model = multi_gpu_model(template, gpus=args.gpus)
parallel_model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])

# Synthetic MNIST-shaped data: no download.
rng = np.random.default_rng(0)
x = rng.random((512, 28, 28, 1), dtype=np.float32)
y = keras.utils.to_categorical(rng.integers(0, 10, size=512), 10)

checkpoint = ModelCheckpoint(
    os.path.join(output_dir, "weights-{epoch:02d}-{val_loss:.3f}.keras"),
    monitor="val_loss",
    period=1,  # Keras 2's name for "every epoch"
)
# The global batch of 128 is split across the replicas (32 each on 4).
history = parallel_model.fit(
    x,
    y,
    batch_size=128,
    epochs=args.epochs,
    validation_split=0.25,
    callbacks=[checkpoint],
    verbose=2,
)

# Save through the template (or the parallel model: the same file).
model_path = os.path.join(output_dir, "model.keras")
template.save(model_path)

# The file is an ordinary Keras model: it loads on one device and predicts
# what the trained template predicts.
reloaded = keras.models.load_model(model_path)
np.testing.assert_allclose(
    reloaded.predict(x[:16], verbose=0), template.predict(x[:16], verbose=0), atol=1e-5
)
print(f"final val_loss {history.history['val_loss'][-1]:.4f}; saved {model_path}")
print("checkpoints:", sorted(name for name in os.listdir(output_dir) if name.startswith("weights")))
