#!/usr/bin/env python
"""U-Net training with a Sequence loader and several workers."""
import argparse

import numpy as np
from keras.callbacks import ModelCheckpoint
from keras.optimizers import Adam
from parallel_keras import multi_gpu_model

from data import SegmentationSequence
from unet import unet
import keras


def dice_coef(y_true, y_pred, smooth=1.):
    y_true_f = keras.ops.reshape(y_true, (-1,))
    y_pred_f = keras.ops.reshape(y_pred, (-1,))
    intersection = keras.ops.sum(y_true_f * y_pred_f)
    return (2.0 * intersection + smooth) / (
        keras.ops.sum(y_true_f) + keras.ops.sum(y_pred_f) + smooth
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=50)
    parser.add_argument('--batch', type=int, default=16)
    parser.add_argument('--gpus', type=int, default=4)
    args = parser.parse_args()

    images = np.random.rand(32, 32, 32, 1).astype('float32')
    masks = (images > 0.5).astype('float32')
    train_gen = SegmentationSequence(images[:24], masks[:24], batch_size=args.batch)
    val_gen = SegmentationSequence(images[24:], masks[24:], batch_size=args.batch,
                                   shuffle=False)

    model = unet()
    parallel_model = multi_gpu_model(model, gpus=args.gpus)
    parallel_model.compile(
        optimizer=Adam(learning_rate=1e-4),
        loss='binary_crossentropy',
        metrics=[dice_coef],
    )
    # parallel-keras migrate: Keras 3 needs this suffix: a full-model
    #   checkpoint writes only '.keras' or '.h5' files (was
    #   'unet_best.hdf5').
    checkpoint = ModelCheckpoint('unet_best.h5', monitor='val_loss', verbose=1,
                                 save_best_only=True)
    # parallel-keras migrate: to keep parallel loading, make the class of
    #   `train_gen` a keras.utils.PyDataset (or Sequence) subclass and call
    #   super().__init__(max_queue_size=4, workers=2,
    #   use_multiprocessing=False) first in its __init__.
    parallel_model.fit(x=train_gen,
                       validation_data=val_gen,
                       epochs=args.epochs,
                       callbacks=[checkpoint])


if __name__ == '__main__':
    main()
