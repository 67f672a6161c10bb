# SPDX-License-Identifier: Apache-2.0
"""Data parallelism: `multi_gpu_model` on tf.distribute.

An internal package: its public names (`multi_gpu_model`, `ParallelModel`)
are exported by `parallel_keras`.
"""

__all__: list[str] = []
