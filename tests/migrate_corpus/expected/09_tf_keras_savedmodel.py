"""A TF 1.x / tf.keras script: tf.keras.utils.multi_gpu_model and SavedModel.

Written against tensorflow 1.14 (keras bundled as tf.keras), with the
session set-up it needed there.
"""
import os

import numpy as np
import tensorflow as tf
import keras
import parallel_keras

if tf.__version__.startswith('1.'):
    # grab GPU memory as needed
    for physical_gpu in tf.config.list_physical_devices('GPU'):
        tf.config.experimental.set_memory_growth(physical_gpu, True)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation='tanh', input_shape=(4,)),
    tf.keras.layers.Dense(2),
])
parallel_model = parallel_keras.multi_gpu_model(model, gpus=2, cpu_merge=False)
parallel_model.compile(
    optimizer=tf.keras.optimizers.Adam(
        learning_rate=keras.optimizers.schedules.InverseTimeDecay(
            1e-3, decay_steps=1, decay_rate=1e-4
        )
    ),
    loss='mse',
)
samples = np.random.random((32, 4))
parallel_model.fit(samples, samples[:, :2], batch_size=8, epochs=1, verbose=2)

os.makedirs('ckpt', exist_ok=True)
# parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
#   only '.weights.h5' files (was 'ckpt/weights').
model.save_weights('ckpt/weights.weights.h5')
# parallel-keras migrate: Keras 3 needs this suffix: save writes
#   '.keras' or '.h5' files (was 'exported_model').
model.save('exported_model.keras')
# parallel-keras migrate: Keras 3 needs this suffix: renamed like the
#   file this script saves (was 'exported_model').
restored = tf.keras.models.load_model('exported_model.keras')
print(restored.predict(samples[:2]))
