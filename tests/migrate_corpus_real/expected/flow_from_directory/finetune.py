'''Cats vs dogs from folders of images (Keras 1 era tutorial, multi-GPU).

data/
    train/cats/*.png, train/dogs/*.png
    validation/cats/*.png, validation/dogs/*.png
'''
import tensorflow as tf
from keras.models import Sequential
from keras.layers import Conv2D, MaxPooling2D
from keras.layers import Activation, Dropout, Flatten, Dense
from keras import backend as K
from parallel_keras import multi_gpu_model
import keras
import parallel_keras

# parallel-keras migrate: per_process_gpu_memory_fraction=0.45 became
#   memory growth; for a hard cap, call
#   tf.config.set_logical_device_configuration(gpu,
#   [tf.config.LogicalDeviceConfiguration(memory_limit=MB)]) for each
#   GPU before using TensorFlow, MB being 0.45 of the GPU's memory.
for physical_gpu in tf.config.list_physical_devices('GPU'):
    tf.config.experimental.set_memory_growth(physical_gpu, True)

img_width, img_height = 24, 24
train_data_dir = 'data/train'
validation_data_dir = 'data/validation'
nb_train_samples = 16
nb_validation_samples = 8
epochs = 1
batch_size = 8

if ('th' if K.image_data_format() == 'channels_first' else 'tf') == 'th':
    input_shape = (3, img_width, img_height)
else:
    input_shape = (img_width, img_height, 3)

model = Sequential()
model.add(Conv2D(8, (3, 3), input_shape=input_shape))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Flatten())
model.add(Dense(16))
model.add(Activation('relu'))
model.add(Dropout(0.5))
model.add(Dense(1))
model.add(Activation('sigmoid'))

parallel_model = multi_gpu_model(model, gpus=2)
parallel_model.compile(
    loss='binary_crossentropy',
    optimizer=parallel_keras.compat.keras2_optimizer(
        keras.optimizers.RMSprop
    )(),
    metrics=['accuracy'],
)
train_generator = keras.utils.image_dataset_from_directory(
    train_data_dir,
    image_size=(img_width, img_height),
    batch_size=batch_size,
    shuffle=False,
    label_mode='binary',
    interpolation='nearest',
).map(
    lambda images, labels: (
        keras.ops.cast(images, 'float32') * (1.0 / 255),
        labels,
    )
)
validation_generator = keras.utils.image_dataset_from_directory(
    validation_data_dir,
    image_size=(img_width, img_height),
    batch_size=batch_size,
    shuffle=False,
    label_mode='binary',
    interpolation='nearest',
).map(
    lambda images, labels: (
        keras.ops.cast(images, 'float32') * (1.0 / 255),
        labels,
    )
)

parallel_model.fit(
    train_generator,
    epochs=epochs,
    validation_data=validation_generator)

model.save('first_try.h5')
