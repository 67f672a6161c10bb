"""Seed 002, section 2: "正确的姿势" -- a ModelCheckpoint that saves the template.

The blog's ParallelModelCheckpoint, verbatim, used on a small VGG-style net.
"""
from parallel_keras import multi_gpu_model
from keras.callbacks import ModelCheckpoint
from keras import layers, models, optimizers
import numpy as np
import os
import tensorflow

tensorflow.config.set_visible_devices(
    [
        gpu
        for gpu in tensorflow.config.list_physical_devices('GPU')
        if gpu.name.rsplit(':', 1)[-1] in str("0, 1").replace(' ', '').split(',')
    ],
    'GPU',
)

from parallel_keras import ParallelModelCheckpoint


def vgg(input_shape=(16, 16, 3), num_classes=4):
    model = models.Sequential()
    model.add(layers.Conv2D(8, (3, 3), activation='relu', padding='same',
                            input_shape=input_shape))
    model.add(layers.MaxPooling2D((2, 2)))
    model.add(layers.Conv2D(8, (3, 3), activation='relu', padding='same'))
    model.add(layers.GlobalAveragePooling2D())
    model.add(layers.Dense(num_classes, activation='softmax'))
    return model


Optimizer = optimizers.SGD(learning_rate=0.01, momentum=0.9, nesterov=True)
Loss = 'categorical_crossentropy'
Metrics = ['accuracy']

model = vgg()
paralle_model = multi_gpu_model(model, gpus=2)
paralle_model.compile(optimizer=Optimizer, loss=Loss, metrics=Metrics)
# parallel-keras migrate: Keras 3 needs this suffix: a full-model
#   checkpoint writes only '.keras' or '.h5' files (was
#   'vgg-{epoch:02d}-{val_loss:.4f}.hdf5').
model_path = "vgg-{epoch:02d}-{val_loss:.4f}.h5"
model_checkpoint = ParallelModelCheckpoint(model, model_path, monitor='val_loss', mode='min', verbose=1, save_best_only=False)

x = np.random.random((48, 16, 16, 3))
y = np.eye(4)[np.random.randint(4, size=48)]
paralle_model.fit(x, y, batch_size=16, epochs=1, validation_split=0.25,
                  callbacks=[model_checkpoint])
