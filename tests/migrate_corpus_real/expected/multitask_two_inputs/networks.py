"""Two-input, two-output network: image + metadata -> class and box."""
from keras.layers import Input, Conv2D, GlobalAveragePooling2D, Dense
from keras.layers import concatenate
from keras.models import Model


def build_network(image_shape=(16, 16, 3), meta_dim=4, num_classes=3):
    image = Input(shape=image_shape)
    meta = Input(shape=(meta_dim,))
    x = Conv2D(8, 3, activation='relu', padding='same')(image)
    x = GlobalAveragePooling2D()(x)
    x = concatenate([x, Dense(8, activation='relu')(meta)])
    label = Dense(num_classes, activation='softmax')(x)
    box = Dense(4, activation='sigmoid')(x)
    return Model(inputs=[image, meta], outputs=[label, box])
