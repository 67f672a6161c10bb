"""Seeds 003/004 as a data-generator script: template on the CPU, GPU count.

The template is built under `tf.device('/cpu:0')` and replicated on as many
GPUs as the TF1 session lists; batches come from a `keras.utils.Sequence`
with a dummy length that `fit_generator` cycles for `steps_per_epoch`; the
best model is kept by `val_acc`, and the loss curve is plotted.
"""
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1,2,3'

import matplotlib
import parallel_keras
import parallel_keras.devices
matplotlib.use('Agg')
from matplotlib import pyplot as plt
import numpy as np
import tensorflow as tf
from keras.callbacks import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau, TensorBoard
from keras.layers import Dense, Input
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import Sequence, to_categorical
from parallel_keras import multi_gpu_model

G = len(
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
BATCH = 8


class RandomBatches(Sequence):
    """Draws a fresh batch each time; the length is a placeholder."""

    def __init__(self, batch_size, seed):
        super().__init__()
        self.batch_size = batch_size
        self.rng = np.random.RandomState(seed)

    def __len__(self):
        return 1

    def __getitem__(self, index):
        x = self.rng.rand(self.batch_size, 6).astype('float32')
        y = to_categorical((x.sum(axis=1) > 3).astype('int32'), 2)
        return x, y


with parallel_keras.device('/cpu:0'):
    inputs = Input((6,))
    hidden = Dense(16, activation='relu')(inputs)
    outputs = Dense(2, activation='softmax')(hidden)
    model = Model(inputs, outputs)

parallel_model = multi_gpu_model(model, gpus=G)
parallel_model.compile(
    loss='categorical_crossentropy',
    optimizer=SGD(learning_rate=0.05, momentum=0.9),
    metrics=['acc'],
)
# parallel-keras migrate: Keras 3 needs this suffix: a weights-only
#   checkpoint writes only '.weights.h5' files (was
#   'best-{epoch:02d}-{val_acc:.3f}.h5').
callbacks = [
    ModelCheckpoint(
        'best-{epoch:02d}-{val_acc:.3f}.weights.h5',
        monitor='val_acc',
        mode='max',
        save_best_only=True,
        save_weights_only=True,
    ),
    EarlyStopping(monitor='val_acc', mode='max', patience=5),
    ReduceLROnPlateau(monitor='val_loss', factor=0.5, patience=2),
    TensorBoard(log_dir='logs'),
]
history = parallel_model.fit(
    parallel_keras.repeat_sequence(RandomBatches(BATCH * G, 0), 6),
    steps_per_epoch=6,
    epochs=3,
    validation_data=parallel_keras.repeat_sequence(RandomBatches(BATCH * G, 1), 2),
    validation_steps=2,
    callbacks=callbacks,
)
assert parallel_model.optimizer.iterations.numpy() == 6 * 3
plt.plot(history.history['loss'])
plt.plot(history.history['val_loss'])
plt.savefig('loss.png')
# parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
#   only '.weights.h5' files (was 'sequence_model.h5').
model.save_weights('sequence_model.weights.h5')
