# The "ModelMGPU" recipe: a Model subclass that adopts the parallel model's
# __dict__ and routes save/load to the serial model, plus a weights
# checkpoint written every `period` epochs.
import numpy as np
from keras.layers import Input, Dense, BatchNormalization
from keras.models import Model
from keras.optimizers import RMSprop
from keras.callbacks import ModelCheckpoint, EarlyStopping
from keras.utils.multi_gpu_utils import multi_gpu_model as make_parallel

WEIGHTS_PATTERN = 'weights.{epoch:02d}.hdf5'


class ModelMGPU(Model):
    def __init__(self, ser_model, gpus):
        pmodel = make_parallel(ser_model, gpus)
        self.__dict__.update(pmodel.__dict__)
        self._smodel = ser_model

    def __getattribute__(self, attrname):
        '''Override load and save methods to be used from the serial-model. The
        serial-model holds references to the weights in the multi-gpu model.
        '''
        if 'load' in attrname or 'save' in attrname:
            return getattr(self._smodel, attrname)
        return super(ModelMGPU, self).__getattribute__(attrname)


inputs = Input(shape=(6,))
hidden = Dense(8, activation='relu')(inputs)
hidden = BatchNormalization()(hidden)
outputs = Dense(1)(hidden)
model = Model(inputs=inputs, outputs=outputs)

parallel_model = ModelMGPU(model, gpus=2)
parallel_model.compile(optimizer=RMSprop(lr=0.001, rho=0.9, decay=0.0), loss='mse')

callbacks = [
    ModelCheckpoint(WEIGHTS_PATTERN, monitor='loss', save_weights_only=True, period=1),
    EarlyStopping(monitor='loss', patience=3),
]
features = np.random.random((64, 6))
targets = features.sum(axis=1, keepdims=True)
parallel_model.fit(features, targets, batch_size=16, epochs=1, callbacks=callbacks)
parallel_model.save('mgpu_template.h5')  # saves the serial model
