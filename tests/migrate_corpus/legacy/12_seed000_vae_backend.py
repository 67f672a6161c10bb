"""Seed 000's data parallelism on a model with backend math in its layers.

A sampling layer written with `K.random_normal`, an L2-normalized embedding
(`K.l2_normalize`), a loss with `K.categorical_crossentropy`, a seeded run
(`tf.set_random_seed` is not used: the script seeds NumPy), checkpoints by
`val_acc`, and a CSV log whose columns a later cell reads back.
"""
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
import csv

import numpy as np
import keras
from keras import backend as K
from keras.layers import Dense, Input, Lambda

NUM_CLASSES = 3


def sample(args):
    mean, log_var = args
    epsilon = K.random_normal(shape=K.shape(mean), mean=0.0, stddev=1.0)
    return mean + K.exp(0.5 * log_var) * epsilon


def loss(y_true, y_pred):
    return K.mean(K.categorical_crossentropy(y_true, y_pred))


inputs = Input((8,))
mean = Dense(4)(inputs)
log_var = Dense(4)(inputs)
z = Lambda(sample)([mean, log_var])
embedding = Lambda(lambda t: K.l2_normalize(t, axis=-1))(z)
outputs = Dense(NUM_CLASSES, activation='softmax')(embedding)
model = keras.models.Model(inputs, outputs)

rng = np.random.RandomState(0)
x = rng.rand(64, 8).astype('float32')
y = keras.utils.to_categorical(rng.randint(NUM_CLASSES, size=64), NUM_CLASSES)

parallel_model = keras.utils.multi_gpu_model(model, 2)
parallel_model.compile(optimizer=keras.optimizers.Adam(lr=0.001), loss=loss,
                       metrics=['accuracy'])
callbacks = [
    keras.callbacks.CSVLogger('training.csv'),
    keras.callbacks.ModelCheckpoint('vae-{epoch:02d}-{val_acc:.2f}.hdf5', monitor='val_acc'),
]
parallel_model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25, callbacks=callbacks)
with open('training.csv') as log:
    best = max(float(row['val_acc']) for row in csv.DictReader(log))
print('best val_acc', best)
model.save('vae_classifier.h5')
