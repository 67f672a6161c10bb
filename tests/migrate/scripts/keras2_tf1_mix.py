# A Keras 2 / TF1 script in the style of the issue-20 findings: every line
# below is rewritten by migrate, with nothing left for a person.
import os
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
import numpy as np
import tensorflow as tf
from keras.layers import Input, Dense, CuDNNGRU, CuDNNLSTM, LSTM, Reshape
from keras.models import Model
from keras.optimizers import Adam
from keras.callbacks import ReduceLROnPlateau, ProgbarLogger
from keras.utils import print_summary

tf.set_random_seed(1)
np.random.seed(1)
tf.logging.set_verbosity(tf.logging.ERROR)
G = 0
rnn = CuDNNLSTM if G > 0 else LSTM

inp = Input(shape=(6, 3))
h = CuDNNGRU(8, return_sequences=True, name='enc/gru')(inp)
h = rnn(4)(h)
out = Dense(2, activation='softmax', name='head/out')(h)
model = Model(inputs=inp, outputs=out)
print_summary(model, line_length=80)
model.compile(Adam(lr=0.01, epsilon=None, clipnorm=0), 'categorical_crossentropy',
              metrics=['accuracy'], sample_weight_mode=None)
x = np.random.rand(32, 6, 3).astype(np.float)
y = np.eye(2)[np.random.randint(0, 2, 32)].astype(np.float32)
hist = model.fit(x, y, epochs=2, batch_size=8, verbose=0,
                 callbacks=[ReduceLROnPlateau(monitor='loss', epsilon=0.01), ProgbarLogger(count_mode='steps')])
best = np.Inf
for v in hist.history['loss']:
    best = min(best, np.asscalar(np.array(v)))
p = model.predict(x[:4])
s = tf.reduce_sum(tf.to_float(tf.argmax(p, dimension=1)), keep_dims=True)
print(model.get_layer('head/out').name, best < np.Inf, float(s[0]) >= 0)
