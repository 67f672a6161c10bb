"""Trains a ResNet on CIFAR-10 on several GPUs.

    python train.py --gpus 4 --epochs 200 --batch-size 128
"""
from __future__ import print_function

import argparse
import os

import numpy as np
import tensorflow as tf
import keras
from keras.callbacks import ModelCheckpoint, LearningRateScheduler
from keras.datasets import cifar10
from keras.optimizers import Adam
from parallel_keras import multi_gpu_model

from models import resnet_v1
import parallel_keras.callbacks
import parallel_keras.devices

# Don't grab all the GPU memory up front.
for physical_gpu in tf.config.list_physical_devices('GPU'):
    tf.config.experimental.set_memory_growth(physical_gpu, True)

parser = argparse.ArgumentParser(description='CIFAR-10 ResNet, multi-GPU')
parser.add_argument('--gpus', type=int, default=0,
                    help='number of GPUs (0: all of them)')
parser.add_argument('--epochs', type=int, default=200)
parser.add_argument('--batch-size', type=int, default=128)
parser.add_argument('--depth', type=int, default=20)
parser.add_argument('--save-dir', default=os.path.join(os.getcwd(), 'saved_models'))
args = parser.parse_args()

G = args.gpus or len(
    [
        device.name
        for device in tf.config.list_logical_devices('GPU')
        or (
            tf.config.list_logical_devices('CPU')
            if parallel_keras.devices.gpus_are_simulated()
            else []
        )
    ]
)
print('Training on %d GPUs' % G)

(x_train, y_train), (x_test, y_test) = cifar10.load_data()
x_train = x_train.astype('float32') / 255
x_test = x_test.astype('float32') / 255
x_train_mean = np.mean(x_train, axis=0)
x_train -= x_train_mean
x_test -= x_train_mean
y_train = keras.utils.to_categorical(y_train, 10)
y_test = keras.utils.to_categorical(y_test, 10)


def lr_schedule(epoch):
    lr = 1e-3
    if epoch > 180:
        lr *= 0.5e-3
    elif epoch > 160:
        lr *= 1e-3
    elif epoch > 120:
        lr *= 1e-2
    elif epoch > 80:
        lr *= 1e-1
    return lr


with tf.device('/cpu:0'):
    model = resnet_v1(input_shape=x_train.shape[1:], depth=args.depth)

parallel_model = multi_gpu_model(model, gpus=G)
parallel_model.compile(loss='categorical_crossentropy',
                       optimizer=Adam(learning_rate=lr_schedule(0)),
                       metrics=['acc'])

model_type = 'ResNet%dv1' % args.depth
model_name = 'cifar10_%s_model.{epoch:03d}.h5' % model_type
if not os.path.isdir(args.save_dir):
    os.makedirs(args.save_dir)
filepath = os.path.join(args.save_dir, model_name)

checkpoint = parallel_keras.callbacks.ModelCheckpoint(
    filepath=filepath, monitor='val_acc', mode='max', verbose=1, save_best_only=True
)
callbacks = [checkpoint, LearningRateScheduler(lr_schedule)]

parallel_model.fit(x_train, y_train,
                   batch_size=args.batch_size * G,
                   epochs=args.epochs,
                   validation_data=(x_test, y_test),
                   shuffle=True,
                   callbacks=callbacks)

scores = parallel_model.evaluate(x_test, y_test, verbose=1)
print('Test loss:', scores[0])
print('Test accuracy:', scores[1])

# Save the single-GPU model: the parallel one only loads on as many GPUs.
parallel_model.template.save(os.path.join(args.save_dir, 'cifar10_final.h5'))
