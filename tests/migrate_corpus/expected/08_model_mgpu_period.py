# The "ModelMGPU" recipe: a Model subclass that adopts the parallel model's
# __dict__ and routes save/load to the serial model, plus a weights
# checkpoint written every `period` epochs.
import numpy as np
from keras.layers import Input, Dense, BatchNormalization
from keras.models import Model
from keras.optimizers import RMSprop
from keras.callbacks import ModelCheckpoint, EarlyStopping
from parallel_keras import multi_gpu_model as make_parallel
import parallel_keras.callbacks

# parallel-keras migrate: Keras 3 needs this suffix: a weights-only
#   checkpoint writes only '.weights.h5' files (was
#   'weights.{epoch:02d}.hdf5').
WEIGHTS_PATTERN = 'weights.{epoch:02d}.weights.h5'


def ModelMGPU(ser_model, gpus):
    return make_parallel(ser_model, gpus)


inputs = Input(shape=(6,))
hidden = Dense(8, activation='relu')(inputs)
hidden = BatchNormalization()(hidden)
outputs = Dense(1)(hidden)
model = Model(inputs=inputs, outputs=outputs)

parallel_model = ModelMGPU(model, gpus=2)
parallel_model.compile(
    optimizer=parallel_keras.compat.keras2_optimizer(RMSprop)(
        learning_rate=0.001, rho=0.9
    ),
    loss='mse'
)

callbacks = [
    parallel_keras.callbacks.ModelCheckpoint(
        WEIGHTS_PATTERN, monitor='loss', save_weights_only=True, period=1
    ),
    EarlyStopping(monitor='loss', patience=3),
]
features = np.random.random((64, 6))
targets = features.sum(axis=1, keepdims=True)
parallel_model.fit(features, targets, batch_size=16, epochs=1, callbacks=callbacks)
parallel_model.save('mgpu_template.h5')  # saves the serial model
