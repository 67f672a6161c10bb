"""Seed 002, section 2, as a whole training script of its time.

The blog's `ParallelModelCheckpoint` with its path of metric names
(`unet-{epoch:02d}-{val_loss:.4f}-{val_acc:.4f}-{val_iou:.4f}.hdf5`), in the
script around it: GPUs chosen by CUDA_VISIBLE_DEVICES before the imports, a
TF1 session that only sets allow_growth, an IoU metric written with the
backend, TensorBoard, and the accuracy curves plotted from the history.
"""
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "0, 1"

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
import keras
from keras.callbacks import ModelCheckpoint, TensorBoard
from keras.layers import Conv2D, Input
from keras.models import Model
from parallel_keras import multi_gpu_model

for physical_gpu in tf.config.list_physical_devices('GPU'):
    tf.config.experimental.set_memory_growth(physical_gpu, True)


from parallel_keras import ParallelModelCheckpoint


def iou(y_true, y_pred):
    # Per-pixel class: the argmax over the channel axis (Keras 2: axis=-1).
    true_class = keras.ops.argmax(y_true, axis=-1)
    pred_class = keras.ops.argmax(y_pred, axis=-1)
    hits = keras.ops.cast(keras.ops.equal(true_class, pred_class), 'float32')
    return keras.ops.mean(hits)


def get_unet(input_shape, classes=3):
    image = Input(input_shape)
    x = Conv2D(8, 3, padding='same', activation='relu')(image)
    mask = Conv2D(classes, 1, activation='softmax')(x)
    return Model(image, mask)


rng = np.random.RandomState(0)
x = rng.rand(64, 8, 8, 1).astype('float32')
y = keras.utils.to_categorical(rng.randint(3, size=(64, 8, 8)), 3)

model = get_unet((8, 8, 1))
paralle_model = multi_gpu_model(model, gpus=2)
paralle_model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss='categorical_crossentropy',
                      metrics=['acc', iou])
# parallel-keras migrate: Keras 3 needs this suffix: a full-model
#   checkpoint writes only '.keras' or '.h5' files (was
#   'unet-{epoch:02d}-{val_loss:.4f}-{val_acc:.4f}-{val_iou:.4f}.hdf5').
model_path = "unet-{epoch:02d}-{val_loss:.4f}-{val_acc:.4f}-{val_iou:.4f}.h5"
model_checkpoint = ParallelModelCheckpoint(model, model_path, monitor='val_loss', mode='min', verbose=1, save_best_only=False)
tensorboard = TensorBoard(log_dir='./logs', histogram_freq=0, write_graph=True)
H = paralle_model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25,
                      callbacks=[model_checkpoint, tensorboard])

plt.plot(H.history['acc'], label='train')
plt.plot(H.history['val_acc'], label='val')
plt.plot(H.history['val_iou'], label='val iou')
plt.legend()
plt.savefig('accuracy.png')
