"""Fine-tunes a classifier from pretext-task weights (loaded by layer name)."""
import argparse
import os

import numpy as np
from tensorflow.python.client import device_lib
from keras.callbacks import ModelCheckpoint, TensorBoard
from keras.optimizers import SGD
from keras.utils import to_categorical
from parallel_keras import multi_gpu_model

from encoders import classifier
import parallel_keras.callbacks
import parallel_keras.devices
import tensorflow


def get_available_gpus():
    local_device_protos = device_lib.list_local_devices()
    return [
        device.name
        for device in tensorflow.config.list_logical_devices('GPU')
        or (
            tensorflow.config.list_logical_devices('CPU')
            if parallel_keras.devices.gpus_are_simulated()
            else []
        )
    ]


parser = argparse.ArgumentParser()
parser.add_argument('--pretrained', default='weights/pretext_weights.h5')
parser.add_argument('--epochs', type=int, default=30)
parser.add_argument('--logdir', default='logs')
parser.add_argument('--out', default='weights')
args = parser.parse_args()

num_gpus = len(get_available_gpus())
x = np.random.rand(64, 16, 16, 1).astype('float32')
y = to_categorical(np.random.randint(0, 3, 64), 3)

model = classifier(3)
# Only the convolution layers exist in the pretext model.
parallel_keras.compat.load_weights(model, args.pretrained, by_name=True)
if num_gpus > 1:
    train_model = multi_gpu_model(model, gpus=num_gpus)
else:
    train_model = model
train_model.compile(
    SGD(learning_rate=0.005, momentum=0.9),
    'categorical_crossentropy',
    metrics=['accuracy'],
)
weights_path = os.path.join(args.out, 'finetuned-{epoch:02d}-{val_loss:.2f}.hdf5')
train_model.fit(
    x,
    y,
    batch_size=16,
    epochs=args.epochs,
    validation_split=0.25,
    callbacks=[
        parallel_keras.callbacks.ModelCheckpoint(
            weights_path, save_weights_only=True
        ),
        TensorBoard(log_dir=args.logdir),
    ],
)
