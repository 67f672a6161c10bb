"""A Keras 2.0 era script: generator training and an "alt model" checkpoint.

The checkpoint swaps the template in for the parallel model around each
save (a widespread recipe). Data comes from a Python generator through
fit_generator / evaluate_generator / predict_generator.
"""
import numpy as np
import keras
from keras.callbacks import ModelCheckpoint
from keras.optimizers import SGD
from parallel_keras import multi_gpu_model
import parallel_keras

BATCH_SIZE = 16


class AltModelCheckpoint(parallel_keras.ParallelModelCheckpoint):
    """Saves `alternate_model` (the template) instead of the trained model."""

    def __init__(self, filepath, alternate_model, **kwargs):
        self.alternate_model = alternate_model
        super(AltModelCheckpoint, self).__init__(alternate_model, filepath, **kwargs)


def batches(num_batches=None):
    rng = np.random.RandomState(0)
    produced = 0
    while num_batches is None or produced < num_batches:
        x = rng.rand(BATCH_SIZE, 10)
        y = (x.sum(axis=1, keepdims=True) > 5).astype('float32')
        produced += 1
        yield x, y


model = keras.models.Sequential()
model.add(keras.layers.Dense(12, activation='relu', input_dim=10))
model.add(keras.layers.Dense(1, activation='sigmoid'))

parallel_model = multi_gpu_model(model, gpus=2)
parallel_model.compile(loss='binary_crossentropy',
                       optimizer=SGD(
                           keras.optimizers.schedules.InverseTimeDecay(
                               0.01, decay_steps=1, decay_rate=1e-6
                           ),
                           momentum=0.9,
                           nesterov=True
                       ),  # lr, momentum, decay, nesterov
                       metrics=['accuracy'])

checkpoint = AltModelCheckpoint('alt_model.h5', model)
parallel_model.fit(batches(), steps_per_epoch=4, epochs=1,
                   callbacks=[checkpoint])
loss_and_accuracy = parallel_model.evaluate(batches(2), steps=2)
predictions = parallel_model.predict(batches(1), steps=1)
print(loss_and_accuracy, predictions.shape)
