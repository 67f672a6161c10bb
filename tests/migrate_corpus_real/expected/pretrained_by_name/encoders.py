"""Feature extractor shared by the pretext task and the classifier."""
from keras.layers import Conv2D, GlobalMaxPooling2D, Dense, Input
from keras.models import Model


def feature_extractor(inputs):
    x = Conv2D(8, 3, activation='relu', padding='same', name='block1_conv')(inputs)
    x = Conv2D(8, 3, activation='relu', padding='same', name='block2_conv')(x)
    return GlobalMaxPooling2D(name='pool')(x)


def classifier(num_classes, input_shape=(16, 16, 1)):
    inputs = Input(shape=input_shape, name='image')
    features = feature_extractor(inputs)
    outputs = Dense(num_classes, activation='softmax', name='predictions')(features)
    return Model(inputs, outputs, name='classifier')
