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
from keras import backend as K
from keras.layers import Dense, Input

NUM_CLASSES = 3


def noisy_loss(y_true, y_pred):
    # Label noise drawn anew at every step (Keras 2: a stateful TF op).
    noise = K.random_uniform(shape=K.shape(y_true), minval=0.0, maxval=0.1)
    y_true = (y_true + noise) / K.sum(y_true + noise, axis=-1, keepdims=True)
    return K.mean(K.categorical_crossentropy(y_true, y_pred))


def cosine(y_true, y_pred):
    return K.mean(K.sum(K.l2_normalize(y_true, axis=-1) * K.l2_normalize(y_pred, axis=-1),
                        axis=-1))


inputs = Input((8,))
hidden = Dense(16, activation='relu')(inputs)
outputs = Dense(NUM_CLASSES, activation='softmax')(hidden)
model = keras.models.Model(inputs, outputs)

rng = np.random.RandomState(0)
x = rng.rand(64, 8).astype('float32')
y = keras.utils.to_categorical(rng.randint(NUM_CLASSES, size=64), NUM_CLASSES)

parallel_model = keras.utils.multi_gpu_model(model, 2)
parallel_model.compile(optimizer=keras.optimizers.Adam(lr=0.001), loss=noisy_loss,
                       metrics=['accuracy', cosine])
callbacks = [
    keras.callbacks.CSVLogger('training.csv'),
    keras.callbacks.ModelCheckpoint('noisy-{epoch:02d}-{val_acc:.2f}.hdf5', monitor='val_acc'),
]
parallel_model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25, callbacks=callbacks)
with open('training.csv') as log:
    best = max(float(row['val_acc']) for row in csv.DictReader(log))
print('best val_acc', best)
model.save('classifier.h5')
