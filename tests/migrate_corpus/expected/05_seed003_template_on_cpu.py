"""Seed 003: the Keras documentation example, and its distributed section.

The template is built under tf.device('/cpu:0') so its weights live in host
memory, then replicated with multi_gpu_model. (The seed uses Xception at
224x224 on 8 GPUs; a quarter-width MobileNet at 32x32 on 2 keeps it small.)
"""
import os

import tensorflow as tf
from keras.applications import MobileNet
from parallel_keras import multi_gpu_model
from keras import backend as K
import numpy as np
import keras
import parallel_keras

num_samples = 32
height = 32
width = 32
num_classes = 10

# 实例化基础模型(或者「模版」模型)。
# 我们推荐在 CPU 设备范围内做此操作,
# 这样模型的权重就会存储在 CPU 内存中。
with tf.device('/cpu:0'):
    model = MobileNet(weights=None,
                      input_shape=(height, width, 3),
                      alpha=0.25,
                      classes=num_classes)

parallel_model = multi_gpu_model(model, gpus=2)
parallel_model.compile(
    loss='categorical_crossentropy',
    optimizer=parallel_keras.compat.keras2_optimizer(
        keras.optimizers.RMSprop
    )(),
)

# 生成虚拟数据
x = np.random.random((num_samples, height, width, 3))
y = np.random.random((num_samples, num_classes))

# 这个 `fit` 调用将分布在 2 个 GPU 上。
parallel_model.fit(x, y, epochs=1, batch_size=16)

# 通过模版模型存储模型(共享相同权重):
model.save('my_model.h5')

# 三、分布式运行: register Keras on a session connected to a cluster.
if os.environ.get('KERAS_CLUSTER') == '1':
    # parallel-keras migrate: for training on several machines, start every
    #   worker with `parallel-keras launch` (it sets TF_CONFIG) and build
    #   the model under tf.distribute.MultiWorkerMirroredStrategy.
    server = tf.train.Server.create_local_server()
    # parallel-keras migrate: delete the session; for training on several
    #   machines, start every worker with `parallel-keras launch` (it sets
    #   TF_CONFIG) and build the model under
    #   tf.distribute.MultiWorkerMirroredStrategy.
    sess = tf.Session(server.target)
    # parallel-keras migrate: delete it; for training on several machines,
    #   start every worker with `parallel-keras launch` (it sets TF_CONFIG)
    #   and build the model under tf.distribute.MultiWorkerMirroredStrategy.
    K.set_session(sess)
