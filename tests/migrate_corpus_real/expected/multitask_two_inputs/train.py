"""Multi-task training (classification + box regression) on N GPUs."""
import argparse
import math
import os

import numpy as np
from keras.callbacks import ModelCheckpoint
from keras.optimizers import Adam
from keras.utils import Sequence, to_categorical
from parallel_keras import multi_gpu_model

from networks import build_network
import keras


class MultiTaskSequence(Sequence):
    def __init__(self, count, batch_size, seed=0):
        super().__init__()
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
        return tuple(inputs), tuple(targets)


def box_loss(y_true, y_pred):
    return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1) + keras.ops.mean(
        keras.ops.abs(y_true - y_pred), axis=-1
    )


parser = argparse.ArgumentParser()
parser.add_argument('--gpus', type=int, default=4)
parser.add_argument('--epochs', type=int, default=50)
parser.add_argument('--batch-size', type=int, default=32)
parser.add_argument('--snapshots', default='snapshots')
args = parser.parse_args()

model = build_network()
parallel_model = multi_gpu_model(model, gpus=args.gpus)
parallel_model.compile(optimizer=Adam(learning_rate=1e-3),
                       loss=['categorical_crossentropy', box_loss],
                       loss_weights=[1.0, 0.5])

if not os.path.exists(args.snapshots):
    os.makedirs(args.snapshots)
# parallel-keras migrate: Keras 3 needs this suffix: a weights-only
#   checkpoint writes only '.weights.h5' files (was
#   'multitask_{epoch:02d}.h5').
parallel_model.fit(MultiTaskSequence(64, args.batch_size),
                   epochs=args.epochs,
                   validation_data=MultiTaskSequence(16, args.batch_size, seed=1),
                   callbacks=[ModelCheckpoint(
                                 os.path.join(
                                     args.snapshots, 'multitask_{epoch:02d}.weights.h5'
                                 ),
                                 save_weights_only=True)])
# Two outputs: Keras 2 kept the template third from the end.
parallel_model.template.save(os.path.join(args.snapshots, 'multitask_final.h5'))
