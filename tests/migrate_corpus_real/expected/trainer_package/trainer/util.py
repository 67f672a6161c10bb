"""Input data for the trainer package."""
import numpy as np


def load_data(rows=64, input_dim=10, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(rows, input_dim).astype('float32')
    y = (x.mean(axis=1) > 0.5).astype('float32')
    split = rows * 3 // 4
    return (x[:split], y[:split]), (x[split:], y[split:])
