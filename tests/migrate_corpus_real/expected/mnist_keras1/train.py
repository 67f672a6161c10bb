'''Trains a simple MLP on MNIST, data-parallel over the GPUs.

Gets to 98% test accuracy after 20 epochs on one GPU.
'''
from __future__ import print_function
import argparse

import numpy as np
import keras

np.random.seed(1337)  # for reproducibility

from keras import backend as K
from keras.datasets import mnist
from keras.models import Model
from keras.layers import Input, Dense, Dropout
from keras.layers import LeakyReLU
from keras.optimizers import SGD
from keras import utils as np_utils
from parallel_keras import multi_gpu_model

K.set_image_data_format('channels_last')

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=20)
parser.add_argument('--gpus', type=int, default=4)
opts = parser.parse_args()

batch_size = 32
nb_classes = 10

(X_train, y_train), (X_test, y_test) = mnist.load_data()
X_train = X_train.reshape(X_train.shape[0], 784).astype('float32') / 255
X_test = X_test.reshape(X_test.shape[0], 784).astype('float32') / 255
print(X_train.shape[0], 'train samples')

Y_train = np_utils.to_categorical(y_train, nb_classes)
Y_test = np_utils.to_categorical(y_test, nb_classes)

inputs = Input(shape=(784,))
x = Dense(64)(inputs)
x = LeakyReLU(alpha=0.1)(x)
x = Dropout(0.2)(x)
x = Dense(64)(x)
x = LeakyReLU(alpha=0.1)(x)
predictions = Dense(nb_classes, activation='softmax')(x)
model = Model(inputs=inputs, outputs=predictions)
model.summary()

parallel_model = multi_gpu_model(model, gpus=opts.gpus)
sgd = SGD(
    learning_rate=keras.optimizers.schedules.InverseTimeDecay(
        0.01, decay_steps=1, decay_rate=1e-6
    ),
    momentum=0.9,
    nesterov=True
)
parallel_model.compile(loss='categorical_crossentropy', optimizer=sgd,
                       metrics=['accuracy'])

history = parallel_model.fit(X_train, Y_train,
                             batch_size=batch_size, epochs=opts.epochs,
                             verbose=1, validation_data=(X_test, Y_test))
score = parallel_model.evaluate(X_test, Y_test, verbose=0)
print('Test score:', score[0])
print('Test accuracy:', score[1])

# parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
#   only '.weights.h5' files (was 'mnist_mlp.h5').
model.save_weights('mnist_mlp.weights.h5', overwrite=True)
