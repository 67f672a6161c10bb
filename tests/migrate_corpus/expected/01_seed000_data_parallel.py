"""Seed 000, section 1.2: data parallelism with keras.utils.multi_gpu_model.

The blog's script with its `...` filled in: a small classifier trained on two
GPUs from tf.data pipelines, saving the template's weights at the end.
"""
import os

import numpy as np
import tensorflow as tf
import keras
import parallel_keras

NUM_TRAIN_EPOCH = 1
NUM_CLASSES = 3


def make_dataset(num_samples, batch_size=16, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(num_samples, 8).astype('float32')
    y = keras.utils.to_categorical(rng.randint(NUM_CLASSES, size=num_samples),
                                   NUM_CLASSES)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat()
    return dataset, num_samples // batch_size


# 定义数据集
train_dataset, train_steps = make_dataset(64)
val_dataset, val_steps = make_dataset(32, seed=1)
# 定义一个模型
model = keras.models.Sequential([
    keras.layers.Dense(16, activation='relu', input_shape=(8,)),
    keras.layers.Dense(NUM_CLASSES, activation='softmax'),
])
model.summary()

# 获取数据并行的模型，其中2是GPU的数量。
parallel_model = parallel_keras.multi_gpu_model(model, 2)

# 编译模型。因为是多类分类问题，所以loss是categorical_crossentropy
# lr一定不要太高，不然训练的精度有时能上去，有时上不去
parallel_model.compile(
    optimizer=parallel_keras.compat.keras2_optimizer(keras.optimizers.Adam)(
        lr=0.0001, decay=1e-5
    ),
    loss=keras.losses.categorical_crossentropy,
    metrics=[keras.metrics.categorical_accuracy],
)

# 设置回调
callbacks = [
    # 把训练日志写到'logs'里面 (the seed used TensorBoard, which this test
    # environment does not install; CSVLogger keeps the callback list's shape)
    keras.callbacks.CSVLogger('logs.csv'),
    # 当categorical_accuracy，也就是分类精度在10个epoh之内都没提升时，降低learning rate
    keras.callbacks.ReduceLROnPlateau(
        monitor='categorical_accuracy', mode='max', patience=10, verbose=2
    ),
    # 当categorical_accuracy在15个epoch内没有提升的时候，停止训练
    keras.callbacks.EarlyStopping(
        monitor='categorical_accuracy', mode='max', patience=15, verbose=2
    )
]

# 开始训练
parallel_model.fit(train_dataset, epochs=NUM_TRAIN_EPOCH, steps_per_epoch=train_steps,
          validation_data=val_dataset, validation_steps=val_steps, callbacks=callbacks)

# 保存模型的权重
os.makedirs('model', exist_ok=True)
model.save_weights('model/latest.weights.h5')
