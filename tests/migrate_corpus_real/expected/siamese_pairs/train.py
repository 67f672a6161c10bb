"""Siamese network on image pairs, trained from a pair generator on N GPUs."""
import argparse
import os

import numpy as np
from keras.callbacks import ModelCheckpoint, EarlyStopping
from keras.optimizers import RMSprop
from parallel_keras import multi_gpu_model

from networks import create_siamese
import parallel_keras

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=20)
parser.add_argument('--steps', type=int, default=100)
parser.add_argument('--gpus', type=int, default=2)
parser.add_argument('--checkpoint-dir', default='checkpoints')
args = parser.parse_args()

INPUT_SHAPE = (12, 12)
BATCH_SIZE = 16


def pair_generator(batch_size, seed=0):
    rng = np.random.RandomState(seed)
    while True:
        left = rng.rand(batch_size, *INPUT_SHAPE).astype('float32')
        same = rng.rand(batch_size) > 0.5
        right = np.where(same[:, None, None], left,
                         rng.rand(batch_size, *INPUT_SHAPE)).astype('float32')
        yield (left, right), same.astype('float32')


class MultiGPUCheckpoint(parallel_keras.ParallelModelCheckpoint):
    """Checkpoints the template, not the multi-GPU model."""

    def __init__(self, filepath, model, **kwargs):
        super(MultiGPUCheckpoint, self).__init__(model, filepath, **kwargs)


model = create_siamese(INPUT_SHAPE)
parallel_model = multi_gpu_model(model, gpus=args.gpus)
parallel_model.compile(
    loss='binary_crossentropy',
    optimizer=parallel_keras.compat.keras2_optimizer(RMSprop)(learning_rate=0.001),
    metrics=['acc'],
)

if not os.path.exists(args.checkpoint_dir):
    os.makedirs(args.checkpoint_dir)
callbacks = [
    MultiGPUCheckpoint(os.path.join(args.checkpoint_dir, 'siamese-{epoch:02d}.h5'),
                       model, monitor='loss', verbose=1),
    EarlyStopping(monitor='val_acc', mode='max', patience=5),
]
parallel_model.fit(pair_generator(BATCH_SIZE),
                   steps_per_epoch=args.steps,
                   epochs=args.epochs,
                   validation_data=pair_generator(BATCH_SIZE, seed=1),
                   validation_steps=2,
                   callbacks=callbacks)
