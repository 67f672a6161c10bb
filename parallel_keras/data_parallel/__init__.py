"""Data parallelism: `multi_gpu_model` on tf.distribute."""

from parallel_keras.data_parallel.multi_gpu_model import multi_gpu_model
from parallel_keras.data_parallel.parallel_model import ParallelModel
