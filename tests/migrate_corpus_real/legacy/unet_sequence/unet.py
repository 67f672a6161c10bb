from keras.models import Model
from keras.layers import Input, Conv2D, MaxPooling2D, UpSampling2D
from keras.layers.merge import concatenate


def unet(input_size=(32, 32, 1), base=4):
    inputs = Input(input_size)
    conv1 = Conv2D(base, 3, activation='relu', padding='same')(inputs)
    pool1 = MaxPooling2D(pool_size=(2, 2))(conv1)
    conv2 = Conv2D(base * 2, 3, activation='relu', padding='same')(pool1)
    up3 = UpSampling2D(size=(2, 2))(conv2)
    merge3 = concatenate([conv1, up3], axis=3)
    conv3 = Conv2D(base, 3, activation='relu', padding='same')(merge3)
    outputs = Conv2D(1, 1, activation='sigmoid')(conv3)
    return Model(input=inputs, output=outputs)
