"""Seed 000, section 2: device parallelism with tf.device scopes.

A shared LSTM encodes two sequences, one branch per GPU, merged on the CPU.
The blog's "其他代码 ..." is filled with a short training run and a save.
"""
import numpy as np
import tensorflow as tf
import keras
import parallel_keras

# 模型中共享的 LSTM 用于并行编码两个不同的序列
input_a = keras.Input(shape=(14, 16))
input_b = keras.Input(shape=(14, 16))

shared_lstm = keras.layers.LSTM(8)

# 在一个 GPU 上处理第一个序列
with parallel_keras.device('/device:GPU:0'):
    encoded_a = shared_lstm(input_a)
# 在另一个 GPU上 处理下一个序列
with parallel_keras.device('/device:GPU:1'):
    encoded_b = shared_lstm(input_b)

# 在 CPU 上连接结果
with parallel_keras.device('/cpu:0'):
    merged_vector = keras.layers.concatenate([encoded_a, encoded_b], axis=-1)

# 整个全连接层
fc1 = keras.layers.Dense(5, activation='softmax')(merged_vector)

# 新建模型
model = keras.Model(inputs=[input_a, input_b], outputs=fc1)
# 其他代码
model.compile(
    optimizer=parallel_keras.compat.keras2_optimizer(keras.optimizers.RMSprop)(
        learning_rate=0.001
    ),
    loss='categorical_crossentropy',
    metrics=['accuracy'],
)
sequences_a = np.random.random((32, 14, 16))
sequences_b = np.random.random((32, 14, 16))
labels = keras.utils.to_categorical(np.random.randint(5, size=32), 5)
model.fit([sequences_a, sequences_b], labels, batch_size=8, epochs=1)
model.save('shared_lstm.h5')
