"""Toxic-comment style classifier: embedding, CuDNNLSTM, attention, on several GPUs.

    python train.py --maxlen 100 --epochs 4 --gpus 2
"""
import argparse

import numpy as np
from keras.datasets import imdb
from keras.layers import Input, Embedding, Dense, Dropout, LSTM
from keras.models import Model
from keras.preprocessing import sequence
from parallel_keras import multi_gpu_model

from attention import Attention


def get_model(maxlen, max_features, embed_size=8):
    inp = Input(shape=(maxlen,))
    x = Embedding(max_features, embed_size)(inp)
    x = LSTM(8, return_sequences=True, recurrent_activation='sigmoid')(x)
    x = Attention(maxlen)(x)
    x = Dense(8, activation="relu")(x)
    x = Dropout(0.1)(x)
    x = Dense(1, activation="sigmoid")(x)
    return Model(inputs=inp, outputs=x)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--maxlen', type=int, default=100)
    parser.add_argument('--max-features', type=int, default=20000)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--epochs', type=int, default=4)
    parser.add_argument('--gpus', type=int, default=2)
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = imdb.load_data(num_words=args.max_features)
    x_train = sequence.pad_sequences(x_train, maxlen=args.maxlen)
    x_test = sequence.pad_sequences(x_test, maxlen=args.maxlen)

    model = get_model(args.maxlen, args.max_features)
    parallel_model = multi_gpu_model(model, gpus=args.gpus)
    parallel_model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    parallel_model.fit(x_train, np.asarray(y_train), batch_size=args.batch_size,
                       epochs=args.epochs, validation_data=(x_test, y_test), verbose=2)
    model.save('attention_lstm.h5')
