#!/usr/bin/env python
"""U-Net training with a Sequence loader and several workers."""
import argparse

import numpy as np
from keras import backend as K
from keras.callbacks import ModelCheckpoint
from keras.optimizers import Adam
from keras.utils import multi_gpu_model

from data import SegmentationSequence
from unet import unet


def dice_coef(y_true, y_pred, smooth=1.):
    y_true_f = K.flatten(y_true)
    y_pred_f = K.flatten(y_pred)
    intersection = K.sum(y_true_f * y_pred_f)
    return (2. * intersection + smooth) / (K.sum(y_true_f) + K.sum(y_pred_f) + smooth)


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
    parallel_model.compile(optimizer=Adam(lr=1e-4), loss='binary_crossentropy',
                           metrics=[dice_coef])
    checkpoint = ModelCheckpoint('unet_best.hdf5', monitor='val_loss', verbose=1,
                                 save_best_only=True)
    parallel_model.fit_generator(generator=train_gen,
                                 validation_data=val_gen,
                                 epochs=args.epochs,
                                 callbacks=[checkpoint],
                                 workers=2, use_multiprocessing=False,
                                 max_queue_size=4)


if __name__ == '__main__':
    main()
