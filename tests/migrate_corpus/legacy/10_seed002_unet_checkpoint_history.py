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
from keras import backend as K
from keras.callbacks import ModelCheckpoint, TensorBoard
from keras.layers import Conv2D, Input
from keras.models import Model
from keras.utils import multi_gpu_model

config = tf.ConfigProto()
config.gpu_options.allow_growth = True
sess = tf.Session(config=config)
K.set_session(sess)


class ParallelModelCheckpoint(ModelCheckpoint):
    def __init__(self,model,filepath, monitor='val_loss', verbose=0,
                 save_best_only=False, save_weights_only=False,
                 mode='auto', period=1):
        self.single_model = model
        super(ParallelModelCheckpoint,self).__init__(filepath, monitor, verbose,save_best_only, save_weights_only,mode, period)

    def set_model(self, model):
        super(ParallelModelCheckpoint,self).set_model(self.single_model)


def iou(y_true, y_pred):
    # Per-pixel class: the argmax over the channel axis (Keras 2: axis=-1).
    true_class = K.argmax(y_true)
    pred_class = K.argmax(y_pred)
    hits = K.cast(K.equal(true_class, pred_class), 'float32')
    return K.mean(hits)


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
paralle_model.compile(optimizer=keras.optimizers.Adam(lr=1e-3), loss='categorical_crossentropy',
                      metrics=['accuracy', iou])
model_path = "unet-{epoch:02d}-{val_loss:.4f}-{val_acc:.4f}-{val_iou:.4f}.hdf5"
model_checkpoint = ParallelModelCheckpoint(model, model_path, monitor='val_loss', mode='min', verbose=1, save_best_only=False)
tensorboard = TensorBoard(log_dir='./logs', histogram_freq=0, write_graph=True)
H = paralle_model.fit(x, y, batch_size=16, epochs=2, validation_split=0.25,
                      callbacks=[model_checkpoint, tensorboard])

plt.plot(H.history['acc'], label='train')
plt.plot(H.history['val_acc'], label='val')
plt.plot(H.history['val_iou'], label='val iou')
plt.legend()
plt.savefig('accuracy.png')
