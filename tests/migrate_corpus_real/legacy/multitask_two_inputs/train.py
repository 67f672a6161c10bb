"""Multi-task training (classification + box regression) on N GPUs."""
import argparse
import math
import os

import numpy as np
from keras import backend as K
from keras.callbacks import ModelCheckpoint
from keras.optimizers import Adam
from keras.utils import Sequence, multi_gpu_model, to_categorical

from networks import build_network


class MultiTaskSequence(Sequence):
    def __init__(self, count, batch_size, seed=0):
        rng = np.random.RandomState(seed)
        self.images = rng.rand(count, 16, 16, 3).astype('float32')
        self.meta = rng.rand(count, 4).astype('float32')
        self.labels = to_categorical(rng.randint(0, 3, count), 3)
        self.boxes = rng.rand(count, 4).astype('float32')
        self.batch_size = batch_size

    def __len__(self):
        return int(math.ceil(len(self.images) / float(self.batch_size)))

    def __getitem__(self, idx):
        s = slice(idx * self.batch_size, (idx + 1) * self.batch_size)
        inputs = [self.images[s], self.meta[s]]
        targets = [self.labels[s], self.boxes[s]]
        return inputs, targets


def box_loss(y_true, y_pred):
    return K.mean(K.square(y_true - y_pred), axis=-1) + K.mean(K.abs(y_true - y_pred), axis=-1)


parser = argparse.ArgumentParser()
parser.add_argument('--gpus', type=int, default=4)
parser.add_argument('--epochs', type=int, default=50)
parser.add_argument('--batch-size', type=int, default=32)
parser.add_argument('--snapshots', default='snapshots')
args = parser.parse_args()

model = build_network()
parallel_model = multi_gpu_model(model, gpus=args.gpus)
parallel_model.compile(optimizer=Adam(lr=1e-3),
                       loss=['categorical_crossentropy', box_loss],
                       loss_weights=[1.0, 0.5])

if not os.path.exists(args.snapshots):
    os.makedirs(args.snapshots)
parallel_model.fit_generator(MultiTaskSequence(64, args.batch_size),
                             epochs=args.epochs,
                             validation_data=MultiTaskSequence(16, args.batch_size, seed=1),
                             callbacks=[ModelCheckpoint(
                                 os.path.join(args.snapshots, 'multitask_{epoch:02d}.h5'),
                                 save_weights_only=True)])
# Two outputs: Keras 2 kept the template third from the end.
parallel_model.layers[-3].save(os.path.join(args.snapshots, 'multitask_final.h5'))
