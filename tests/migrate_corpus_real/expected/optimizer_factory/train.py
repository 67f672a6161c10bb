"""Trains a classifier whose optimizer is chosen on the command line."""
import argparse

import numpy as np
import tensorflow as tf
import keras
from keras import optimizers
from keras.layers import Dense, Input
from keras.models import Model
from keras.utils import Sequence
from parallel_keras import multi_gpu_model
import parallel_keras

for physical_gpu in tf.config.list_physical_devices('GPU'):
    tf.config.experimental.set_memory_growth(physical_gpu, True)
tf.config.set_visible_devices(
    [
        gpu
        for gpu in tf.config.list_physical_devices('GPU')
        if gpu.name.rsplit(':', 1)[-1]
        in str('0,1,2,3').replace(' ', '').split(',')
    ],
    'GPU',
)

OPTIMIZERS = {
    'sgd': parallel_keras.compat.keras2_optimizer(optimizers.SGD),
    'adam': parallel_keras.compat.keras2_optimizer(optimizers.Adam),
    'rmsprop': parallel_keras.compat.keras2_optimizer(optimizers.RMSprop),
}


class RandomBatches(Sequence):
    def __init__(self, rows, batch_size, features=6):
        super().__init__(
            max_queue_size=8, workers=2, use_multiprocessing=False
        )
        rng = np.random.RandomState(rows)
        self.x = rng.rand(rows, features).astype('float32')
        self.y = (self.x.sum(axis=1) > features / 2.).astype('float32')
        self.batch_size = batch_size

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, i):
        batch = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[batch], self.y[batch]


def build():
    inputs = Input(shape=(6,))
    hidden = Dense(8, activation='relu')(inputs)
    return Model(inputs, Dense(1, activation='sigmoid')(hidden))


parser = argparse.ArgumentParser()
parser.add_argument('--optimizer', choices=sorted(OPTIMIZERS), default='sgd')
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=10)
parser.add_argument('--gpus', type=int, default=4)
args = parser.parse_args()

template = build()
model = multi_gpu_model(template, gpus=args.gpus)
model.compile(optimizer=OPTIMIZERS[args.optimizer](learning_rate=args.lr),
              loss='binary_crossentropy', metrics=['accuracy'])
model.fit(RandomBatches(64, 16), epochs=args.epochs,
          validation_data=RandomBatches(32, 16))
probabilities = model.predict(
    parallel_keras.repeat_sequence(RandomBatches(32, 16), 2), steps=2
)
print('mean probability', probabilities.mean())
template.save('classifier.h5')
