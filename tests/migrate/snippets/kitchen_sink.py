import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
import tensorflow as tf
import keras
from keras import backend as K
from keras.callbacks import ModelCheckpoint, CSVLogger, Callback
import matplotlib.pyplot as plt

def get_session():
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    return tf.Session(config=config)

K.set_session(get_session())
G = len([d for d in K.get_session().list_devices() if 'GPU' in d.device_type])
n = len(K.get_session().list_devices())

def loss(y, p):
    a = K.argmax(p)
    b = K.expand_dims(p)
    c = K.l2_normalize(p)
    d = K.categorical_crossentropy(y, p)
    e = K.random_normal((2, 3))
    f = K.ctc_batch_cost(y, p, a, b)
    g = K.gradients(p, [y])[0]
    h = K.get_uid('x')
    return K.mean(a)

class LossHistory(Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(logs['acc'], logs.get('val_acc'))

model = keras.models.Sequential()
model.compile(loss='mse', optimizer='adam', metrics=['accuracy'])
cb = ModelCheckpoint('unet-{epoch:02d}-{val_loss:.4f}-{val_acc:.4f}.hdf5', monitor='val_acc', save_best_only=True)
H = model.fit(x, y, callbacks=[cb, CSVLogger('log.csv')])
plt.plot(H.history['acc'])
plt.plot(H.history['val_acc'])
model.save_weights('x_weights.h5')
model.load_weights('x_weights.h5')
model.load_weights('old_weights.h5')
