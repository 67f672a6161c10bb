# -*- coding: utf-8 -*-
"""Sentiment classification with an LSTM on IMDB, two GPUs.

Usage: CUDA devices are picked in the script; run `python train.py`.
"""
import os
os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
import argparse

import keras
from keras.preprocessing import sequence
from keras.models import Sequential
from keras.layers import Dense, Embedding, LSTM
from keras.datasets import imdb
from keras.callbacks import ModelCheckpoint, EarlyStopping
from parallel_keras import multi_gpu_model
import parallel_keras.callbacks
import tensorflow

tensorflow.config.set_visible_devices(
    [
        gpu
        for gpu in tensorflow.config.list_physical_devices('GPU')
        if gpu.name.rsplit(':', 1)[-1]
        in str("0,1").replace(' ', '').split(',')
    ],
    'GPU',
)

parser = argparse.ArgumentParser()
parser.add_argument('--maxlen', type=int, default=80)
parser.add_argument('--epochs', type=int, default=15)
parser.add_argument('--lr', type=float, default=0.001)
parser.add_argument('--decay', type=float, default=1e-5)
parser.add_argument('--gpus', default='0,1')
args = parser.parse_args()

max_features = 50
batch_size = 16

print('Loading data...')
(x_train, y_train), (x_test, y_test) = imdb.load_data(num_words=max_features)
x_train = sequence.pad_sequences(x_train, maxlen=args.maxlen)
x_test = sequence.pad_sequences(x_test, maxlen=args.maxlen)

model = Sequential()
model.add(Embedding(max_features, 8, input_shape=(args.maxlen,)))
model.add(LSTM(8, dropout=0.2, recurrent_dropout=0.2))
model.add(Dense(1, activation='sigmoid'))

gpus = len(args.gpus.split(','))
parallel_model = multi_gpu_model(model, gpus=gpus)
adam = keras.optimizers.Adam(
    learning_rate=keras.optimizers.schedules.InverseTimeDecay(
        args.lr, decay_steps=1, decay_rate=args.decay
    )
)
parallel_model.compile(loss='binary_crossentropy', optimizer=adam,
                       metrics=['acc'])

# parallel-keras migrate: Keras 3 needs this suffix: a weights-only
#   checkpoint writes only '.weights.h5' files (was
#   'lstm.{epoch:02d}.hdf5').
callbacks = [
    EarlyStopping(monitor='val_acc', mode='max', patience=3),
    parallel_keras.callbacks.ModelCheckpoint(
        'lstm.{epoch:02d}.weights.h5',
        monitor='val_loss',
        save_weights_only=True,
        period=1,
    ),
]
parallel_model.fit(x_train, y_train, batch_size=batch_size,
                   epochs=args.epochs, validation_data=(x_test, y_test),
                   callbacks=callbacks)
score, acc = parallel_model.evaluate(x_test, y_test, batch_size=batch_size)
print('Test score:', score)
print('Test accuracy:', acc)
