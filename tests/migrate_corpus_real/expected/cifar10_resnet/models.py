"""Small ResNet-style networks for CIFAR-10 (v1 layout, after He et al.)."""
from keras.layers import Input, Conv2D, BatchNormalization, Activation, Add
from keras.layers import AveragePooling2D, Flatten, Dense
from keras.models import Model
from keras.regularizers import l2


def resnet_layer(inputs, num_filters=16, kernel_size=3, strides=1,
                 activation='relu', batch_normalization=True):
    conv = Conv2D(num_filters, kernel_size=kernel_size, strides=strides,
                  padding='same', kernel_initializer='he_normal',
                  kernel_regularizer=l2(1e-4))
    x = conv(inputs)
    if batch_normalization:
        x = BatchNormalization()(x)
    if activation is not None:
        x = Activation(activation)(x)
    return x


def resnet_v1(input_shape, depth, num_classes=10):
    if (depth - 2) % 6 != 0:
        raise ValueError('depth should be 6n+2 (eg 8, 20, 32, 44)')
    num_filters = 4
    num_res_blocks = int((depth - 2) / 6)

    inputs = Input(shape=input_shape)
    x = resnet_layer(inputs=inputs, num_filters=num_filters)
    for stack in range(2):
        for res_block in range(num_res_blocks):
            strides = 2 if stack > 0 and res_block == 0 else 1
            y = resnet_layer(inputs=x, num_filters=num_filters, strides=strides)
            y = resnet_layer(inputs=y, num_filters=num_filters, activation=None)
            if stack > 0 and res_block == 0:
                x = resnet_layer(inputs=x, num_filters=num_filters, kernel_size=1,
                                 strides=strides, activation=None,
                                 batch_normalization=False)
            x = Add()([x, y])
            x = Activation('relu')(x)
        num_filters *= 2

    x = AveragePooling2D(pool_size=4)(x)
    y = Flatten()(x)
    outputs = Dense(num_classes, activation='softmax',
                    kernel_initializer='he_normal')(y)
    return Model(inputs=inputs, outputs=outputs)
