"""Trains one model through each of the project's own multi-GPU helpers."""
import numpy as np
import keras
from parallel_model import ParallelModel
from utils.towers import to_multi_gpu, slice_batch

GPU_COUNT = 2
rng = np.random.RandomState(0)
x = rng.rand(32, 4).astype('float32')
y = rng.rand(32, 2).astype('float32')
assert slice_batch(x, 2, 1).shape == (16, 4)


def build():
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])


model = build()
parallel = ParallelModel(model, GPU_COUNT)
parallel.compile(loss='mse', optimizer=keras.optimizers.SGD(0.1))
parallel.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
model.save_weights('class.weights.h5')

model = build()
parallel = to_multi_gpu(model, gpu_ids=[0, 1])
parallel.compile(loss='mse', optimizer=keras.optimizers.SGD(0.1))
parallel.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
model.save_weights('function.weights.h5')
