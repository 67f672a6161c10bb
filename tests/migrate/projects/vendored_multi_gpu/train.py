"""A Keras 2 project that vendored multi_gpu_model and its checkpoint callback."""
import numpy as np
import keras
from utils.multi_gpu import multi_gpu_model
from utils.callbacks import MultiGPUCheckpoint, PeriodicCheckpoint

rng = np.random.RandomState(0)
x = rng.rand(32, 4).astype('float32')
y = rng.rand(32, 2).astype('float32')

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
parallel = multi_gpu_model(model, gpus=2)
parallel.compile(loss='mse', optimizer='sgd')
weights = MultiGPUCheckpoint('weights-{epoch:02d}.hdf5', save_weights_only=True, period=2)
whole = MultiGPUCheckpoint('model-{epoch:02d}.hdf5', period=1)
periodic = PeriodicCheckpoint('periodic-{epoch:02d}.hdf5', save_weights_only=True, period=3)
parallel.fit(x, y, epochs=4, batch_size=8, verbose=0, callbacks=[weights, whole, periodic])
model.save_weights('final.weights.h5')
