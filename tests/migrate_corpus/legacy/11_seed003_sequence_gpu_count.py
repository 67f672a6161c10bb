"""Seeds 003/004 as a data-generator script: template on the CPU, GPU count.

The template is built under `tf.device('/cpu:0')` and replicated on as many
GPUs as the TF1 session lists; batches come from a `keras.utils.Sequence`
with a dummy length that `fit_generator` cycles for `steps_per_epoch`; the
best model is kept by `val_acc`, and the loss curve is plotted.
"""
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1,2,3'

import matplotlib
matplotlib.use('Agg')
from matplotlib import pyplot as plt
import numpy as np
import tensorflow as tf
from keras import backend as K
from keras.callbacks import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau, TensorBoard
from keras.layers import Dense, Input
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import Sequence, multi_gpu_model, to_categorical

G = len([d for d in K.get_session().list_devices() if d.device_type == 'GPU'])
BATCH = 8


class RandomBatches(Sequence):
    """Draws a fresh batch each time; the length is a placeholder."""

    def __init__(self, batch_size, seed):
        self.batch_size = batch_size
        self.rng = np.random.RandomState(seed)

    def __len__(self):
        return 1

    def __getitem__(self, index):
        x = self.rng.rand(self.batch_size, 6).astype('float32')
        y = to_categorical((x.sum(axis=1) > 3).astype('int32'), 2)
        return x, y


with tf.device('/cpu:0'):
    inputs = Input((6,))
    hidden = Dense(16, activation='relu')(inputs)
    outputs = Dense(2, activation='softmax')(hidden)
    model = Model(inputs, outputs)

parallel_model = multi_gpu_model(model, gpus=G)
parallel_model.compile(loss='categorical_crossentropy', optimizer=SGD(lr=0.05, momentum=0.9),
                       metrics=['accuracy'])
callbacks = [
    ModelCheckpoint('best-{epoch:02d}-{val_acc:.3f}.h5', monitor='val_acc', save_best_only=True,
                    save_weights_only=True),
    EarlyStopping(monitor='val_acc', patience=5),
    ReduceLROnPlateau(monitor='val_loss', factor=0.5, patience=2),
    TensorBoard(log_dir='logs'),
]
history = parallel_model.fit_generator(RandomBatches(BATCH * G, 0), steps_per_epoch=6, epochs=3,
                                       validation_data=RandomBatches(BATCH * G, 1),
                                       validation_steps=2, callbacks=callbacks)
assert parallel_model.optimizer.iterations.numpy() == 6 * 3
plt.plot(history.history['loss'])
plt.plot(history.history['val_loss'])
plt.savefig('loss.png')
model.save_weights('sequence_model.h5')
