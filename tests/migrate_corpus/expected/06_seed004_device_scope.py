"""Seed 004 (and the Keras 2 FAQ): device parallelism with tf.device_scope.

The FAQ wrote `tf.device_scope`, which never existed in TensorFlow, so this
script never ran as written. Two tweet encoders share one LSTM.
"""
import numpy as np
import tensorflow as tf
import keras
import parallel_keras

# Model where a shared LSTM is used to encode two different sequences in parallel
tweet_a = keras.Input(shape=(14, 16))
tweet_b = keras.Input(shape=(14, 16))

shared_lstm = keras.layers.LSTM(8)

# Process the first sequence on one GPU
with parallel_keras.device('/gpu:0'):
    encoded_a = shared_lstm(tweet_a)
# Process the next sequence on another GPU
with parallel_keras.device('/gpu:1'):
    encoded_b = shared_lstm(tweet_b)

# Concatenate results on CPU
with parallel_keras.device('/cpu:0'):
    merged_vector = keras.layers.concatenate([encoded_a, encoded_b],
                                             axis=-1)

predictions = keras.layers.Dense(1, activation='sigmoid')(merged_vector)
model = keras.models.Model(inputs=[tweet_a, tweet_b], outputs=predictions)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001),
              loss='binary_crossentropy', metrics=['accuracy'])

data_a = np.random.random((32, 14, 16))
data_b = np.random.random((32, 14, 16))
labels = np.random.randint(2, size=(32, 1))
model.fit([data_a, data_b], labels, epochs=1, batch_size=8)
# parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
#   only '.weights.h5' files (was 'tweets.h5').
model.save_weights('tweets.weights.h5')
