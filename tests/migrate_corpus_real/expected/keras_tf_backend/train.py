#!/usr/bin/env python
"""Regression on tabular features read from .npz files, on every GPU found."""
import argparse
import os

import numpy as np
import tensorflow as tf
from keras.callbacks import ModelCheckpoint, ReduceLROnPlateau
from keras.layers import Dense, Dropout, Input
from keras.models import Model
from parallel_keras import multi_gpu_model
import parallel_keras.callbacks
import parallel_keras.devices

tf.config.set_soft_device_placement(True)
for physical_gpu in tf.config.list_physical_devices('GPU'):
    tf.config.experimental.set_memory_growth(physical_gpu, True)


def count_gpus():
    return len(
        [
            device
            for device in tf.config.list_logical_devices('GPU')
            or (
                tf.config.list_logical_devices('CPU')
                if parallel_keras.devices.gpus_are_simulated()
                else []
            )
        ]
    )


def build(num_features):
    inputs = Input(shape=(num_features,), name='features')
    x = Dense(16, activation='relu')(inputs)
    x = Dropout(0.1)(x)
    outputs = Dense(1, name='target')(x)
    return Model(inputs, outputs, name='regressor')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--train', default='data/train.npz')
    parser.add_argument('--valid', default='data/valid.npz')
    parser.add_argument('--checkpoint-dir', default='ckpt')
    parser.add_argument('--name', default='regressor')
    parser.add_argument('--epochs', type=int, default=100)
    args = parser.parse_args()

    train = np.load(args.train)
    valid = np.load(args.valid)
    template = build(train['x'].shape[1])
    gpus = count_gpus()
    model = multi_gpu_model(template, gpus=gpus) if gpus > 1 else template
    model.compile(optimizer='adam', loss='mse')

    if not os.path.isdir(args.checkpoint_dir):
        os.mkdir(args.checkpoint_dir)
    best = os.path.join(args.checkpoint_dir, args.name + '_best.model')
    model.fit(
        train['x'],
        train['y'],
        batch_size=8,
        epochs=args.epochs,
        validation_data=(valid['x'], valid['y']),
        callbacks=[
            parallel_keras.callbacks.ModelCheckpoint(best, save_best_only=True),
            ReduceLROnPlateau(patience=5),
        ],
    )


if __name__ == '__main__':
    main()
