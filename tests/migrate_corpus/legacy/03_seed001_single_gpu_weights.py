# Seed 001: train on 4 GPUs, then save a model that loads on one GPU.
# "偷梁换柱": load the multi-GPU weights into the parallel model, then save the
# template (the single-GPU model), which shares those weights.
import numpy as np
from keras.utils import multi_gpu_model, to_categorical
from keras.layers import Input, Conv2D, MaxPooling2D, Flatten, Dense
from keras.models import Model


def get_model(input_shape):
    inputs = Input(shape=input_shape)
    x = Conv2D(4, (3, 3), activation='relu', padding='same')(inputs)
    x = MaxPooling2D()(x)
    x = Flatten()(x)
    outputs = Dense(2, activation='softmax')(x)
    return Model(inputs=inputs, outputs=outputs)


model = get_model((8, 8, 1))  # 此时为单GPU 搭建的model

# Replicates `model` on 4 GPUs.
# This assumes that your machine has 4 available GPUs.
paralleled_model = multi_gpu_model(model, gpus=4)  # 将搭建的model复制到4个GPU中
# for train
paralleled_model.compile(loss='categorical_crossentropy',
                         optimizer='adam')

images = np.random.random((32, 8, 8, 1))
labels = to_categorical(np.random.randint(2, size=32), 2)
paralleled_model.fit(images, labels, batch_size=16, epochs=1)
paralleled_model.save_weights("multi_model.h5")

# 单GPU预测: 加载之前训练保存的在多GPU上训练的模型参数
paralleled_model.load_weights("multi_model.h5")
model.save('single_gpu_model.h5')  # 保存单GPU的模型

# 加载单GPU模型
model.load_weights("single_gpu_model.h5")
