"""Xception-like network on 4 GPUs, template kept on the CPU (Keras FAQ recipe)."""
import argparse

import numpy as np
import tensorflow as tf
from keras.models import Model
from keras.layers import Input, SeparableConv2D, GlobalAveragePooling2D, Dense
from keras.optimizers import Adadelta
from keras.callbacks import ReduceLROnPlateau, ModelCheckpoint
from parallel_keras import multi_gpu_model
import parallel_keras

parser = argparse.ArgumentParser()
parser.add_argument('--gpus', type=int, default=4)
parser.add_argument('--epochs', type=int, default=20)
args = parser.parse_args()

height, width, num_classes = 16, 16, 5

with parallel_keras.device('/cpu:0'):
    inputs = Input(shape=(height, width, 3))
    x = SeparableConv2D(8, 3, activation='relu', padding='same')(inputs)
    x = GlobalAveragePooling2D()(x)
    outputs = Dense(num_classes, activation='softmax')(x)
    model = Model(inputs=inputs, outputs=outputs)

parallel_model = multi_gpu_model(model, gpus=args.gpus)
parallel_model.compile(loss='categorical_crossentropy',
                       optimizer=parallel_keras.compat.keras2_optimizer(Adadelta)(
                           lr=1.0, decay=1e-4
                       ),
                       metrics=['accuracy'])

data = np.random.random((64, height, width, 3))
labels = np.eye(num_classes)[np.random.randint(0, num_classes, 64)]
# parallel-keras migrate: Keras 3 needs this suffix: a full-model
#   checkpoint writes only '.keras' or '.h5' files (was
#   'xception_best.hdf5').
parallel_model.fit(data, labels, epochs=args.epochs, batch_size=16,
                   validation_split=0.25,
                   callbacks=[ReduceLROnPlateau(monitor='val_loss', factor=0.2, patience=5),
                              ModelCheckpoint('xception_best.h5', save_best_only=True)])
