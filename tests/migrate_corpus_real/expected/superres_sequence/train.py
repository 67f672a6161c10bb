"""SRCNN super-resolution, patches from a Sequence, weights kept on the CPU.

    python train.py --epochs 100 --batch-size 32 --gpus 4
"""
import argparse
import math

import numpy as np
from keras.layers import Conv2D, Input
from keras.models import Model
from keras.optimizers import Adam
from keras.utils import Sequence
from parallel_keras import multi_gpu_model
import keras


def PSNR(y_true, y_pred):
    """Peak signal-to-noise ratio of a batch, for images in [0, 1]."""
    return (
        -10. * keras.ops.log(keras.ops.mean(keras.ops.square(y_pred - y_true))) / keras.ops.log(10.)
    )


class PatchSequence(Sequence):
    """Bicubic-upsampled low-resolution patches and their high-resolution targets."""

    def __init__(self, n_patches=32, patch=16, batch_size=32, seed=0):
        super().__init__(workers=1, use_multiprocessing=False)
        rng = np.random.RandomState(seed)
        self.high = rng.rand(n_patches, patch, patch, 1).astype('float32')
        low = self.high[:, ::2, ::2]
        self.low = np.repeat(np.repeat(low, 2, axis=1), 2, axis=2)
        self.batch_size = batch_size

    def __len__(self):
        return int(math.ceil(len(self.high) / float(self.batch_size)))

    def __getitem__(self, idx):
        rows = slice(idx * self.batch_size, (idx + 1) * self.batch_size)
        return self.low[rows], self.high[rows]


def srcnn(patch=16):
    inputs = Input(shape=(patch, patch, 1))
    x = Conv2D(16, (9, 9), padding='same', activation='relu', kernel_initializer='he_normal')(inputs)
    x = Conv2D(8, (1, 1), padding='same', activation='relu', kernel_initializer='he_normal')(x)
    outputs = Conv2D(1, (5, 5), padding='same', kernel_initializer='he_normal')(x)
    return Model(inputs, outputs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=100)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--gpus', type=int, default=4)
    args = parser.parse_args()

    model = srcnn()
    # Variables on the CPU; each GPU computes its share of the batch.
    parallel_model = multi_gpu_model(model, gpus=args.gpus, cpu_relocation=True)
    parallel_model.compile(
        optimizer=Adam(learning_rate=1e-3), loss='mean_squared_error', metrics=[PSNR]
    )
    train = PatchSequence(batch_size=args.batch_size)
    valid = PatchSequence(n_patches=16, batch_size=args.batch_size, seed=1)
    parallel_model.fit(train, validation_data=valid, epochs=args.epochs)
    # parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
    #   only '.weights.h5' files (was 'srcnn_x2.h5').
    model.save_weights('srcnn_x2.weights.h5')


if __name__ == '__main__':
    main()
