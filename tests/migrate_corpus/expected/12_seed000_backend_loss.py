"""Seed 000's data parallelism with a loss and a metric written with the backend.

A label-noise loss drawing with `K.random_uniform` at every step and
`K.categorical_crossentropy`, a cosine metric with `K.l2_normalize`,
checkpoints by `val_acc`, and a CSV log whose columns are read back.
"""
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
import csv

import numpy as np
import keras
from keras.layers import Dense, Input
import parallel_keras
import tensorflow

NUM_CLASSES = 3


def noisy_loss(y_true, y_pred):
    # Label noise drawn anew at every step (Keras 2: a stateful TF op).
    noise = tensorflow.random.uniform(
        shape=keras.ops.shape(y_true), minval=0.0, maxval=0.1, dtype=keras.backend.floatx()
    )
    y_true = (y_true + noise) / keras.ops.sum(y_true + noise, axis=-1, keepdims=True)
    return keras.ops.mean(keras.ops.categorical_crossentropy(y_true, y_pred))


def cosine(y_true, y_pred):
    return keras.ops.mean(
        keras.ops.sum(
            keras.ops.normalize(y_true, axis=-1, order=2, epsilon=1e-6)
            * keras.ops.normalize(y_pred, axis=-1, order=2, epsilon=1e-6),
            axis=-1,
        )
    )


inputs = Input((8,))
hidden = Dense(16, activation='relu')(inputs)
outputs = Dense(NUM_CLASSES, activation='softmax')(hidden)
model = keras.models.Model(inputs, outputs)

rng = np.random.RandomState(0)
x = rng.rand(64, 8).astype('float32')
y = keras.utils.to_categorical(rng.randint(NUM_CLASSES, size=64), NUM_CLASSES)

parallel_model = parallel_keras.multi_gpu_model(model, 2)
parallel_model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss=noisy_loss,
                       metrics=['acc', cosine])
# parallel-keras migrate: Keras 3 needs this suffix: a full-model
#   checkpoint writes only '.keras' or '.h5' files (was
#   'noisy-{epoch:02d}-{val_acc:.2f}.hdf5').
callbacks = [
    keras.callbacks.CSVLogger('training.csv'),
    keras.callbacks.ModelCheckpoint(
        'noisy-{epoch:02d}-{val_acc:.2f}.h5', monitor='val_acc', mode='max'
    ),
]
parallel_model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25, callbacks=callbacks)
with open('training.csv') as log:
    best = max(float(row['val_acc']) for row in csv.DictReader(log))
print('best val_acc', best)
model.save('classifier.h5')
