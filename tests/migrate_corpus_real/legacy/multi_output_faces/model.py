"""A small two-headed CNN: age regression and gender classification."""
from keras.layers import Input, Conv2D, MaxPooling2D, GlobalAveragePooling2D, Dense
from keras.models import Model


def build_model(image_size=24):
    image = Input(shape=(image_size, image_size, 3), name='image')
    x = Conv2D(8, (3, 3), activation='relu', padding='same')(image)
    x = MaxPooling2D()(x)
    x = Conv2D(8, (3, 3), activation='relu', padding='same')(x)
    x = GlobalAveragePooling2D()(x)
    age = Dense(1, name='age')(x)
    gender = Dense(2, activation='softmax', name='gender')(x)
    return Model(inputs=image, outputs=[age, gender])
