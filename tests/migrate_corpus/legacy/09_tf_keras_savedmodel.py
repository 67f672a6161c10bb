"""A TF 1.x / tf.keras script: tf.keras.utils.multi_gpu_model and SavedModel.

Written against tensorflow 1.14 (keras bundled as tf.keras), with the
session set-up it needed there.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras import backend as K

if tf.__version__.startswith('1.'):
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True  # grab GPU memory as needed
    K.set_session(tf.Session(config=config))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation='tanh', input_shape=(4,)),
    tf.keras.layers.Dense(2),
])
parallel_model = tf.keras.utils.multi_gpu_model(model, gpus=2, cpu_merge=False)
parallel_model.compile(
    optimizer=tf.keras.optimizers.Adam(lr=1e-3, decay=1e-4),
    loss='mse',
)
samples = np.random.random((32, 4))
parallel_model.fit(samples, samples[:, :2], batch_size=8, epochs=1, verbose=2)

os.makedirs('ckpt', exist_ok=True)
model.save_weights('ckpt/weights', save_format='tf')
model.save('exported_model', save_format='tf')
restored = tf.keras.models.load_model('exported_model')
print(restored.predict(samples[:2]))
