"""The shared encoder and the siamese head."""
from keras.layers import Input, Dense, Lambda, Flatten
from keras.layers import concatenate
from keras.layers import Input as TopologyInput  # noqa: F401 (old habit)
from keras.models import Model, Sequential


def create_base_network(input_shape):
    seq = Sequential()
    seq.add(Flatten(input_shape=input_shape))
    seq.add(Dense(32, activation='relu'))
    seq.add(Dense(16, activation='relu'))
    return seq


def create_siamese(input_shape):
    base_network = create_base_network(input_shape)
    input_a = Input(shape=input_shape)
    input_b = Input(shape=input_shape)
    processed_a = base_network(input_a)
    processed_b = base_network(input_b)
    merged = concatenate([processed_a, processed_b])
    out = Dense(1, activation='sigmoid')(merged)
    return Model(inputs=[input_a, input_b], outputs=out)
