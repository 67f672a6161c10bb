"""Feed-forward attention over the time steps of an RNN (Raffel & Ellis, 2015).

The layer most Kaggle text kernels of the Keras 2 era copied.
"""
from keras import backend as K
from keras import initializers, regularizers, constraints
from keras.layers import Layer
import keras


class Attention(Layer):
    def __init__(self, step_dim,
                 W_regularizer=None, b_regularizer=None,
                 W_constraint=None, b_constraint=None,
                 bias=True, **kwargs):
        self.supports_masking = True
        self.init = initializers.get('glorot_uniform')

        self.W_regularizer = regularizers.get(W_regularizer)
        self.b_regularizer = regularizers.get(b_regularizer)

        self.W_constraint = constraints.get(W_constraint)
        self.b_constraint = constraints.get(b_constraint)

        self.bias = bias
        self.step_dim = step_dim
        self.features_dim = 0
        super(Attention, self).__init__(**kwargs)

    def build(self, input_shape):
        assert len(input_shape) == 3

        self.W = self.add_weight(shape=(input_shape[-1],),
                                 initializer=self.init,
                                 name='{}_W'.format(self.name),
                                 regularizer=self.W_regularizer,
                                 constraint=self.W_constraint)
        self.features_dim = input_shape[-1]

        if self.bias:
            self.b = self.add_weight(shape=(input_shape[1],),
                                     initializer='zero',
                                     name='{}_b'.format(self.name),
                                     regularizer=self.b_regularizer,
                                     constraint=self.b_constraint)
        else:
            self.b = None

        self.built = True

    def compute_mask(self, input, input_mask=None):
        return None

    def call(self, x, mask=None):
        features_dim = self.features_dim
        step_dim = self.step_dim

        eij = keras.ops.reshape(
            keras.ops.dot(
                keras.ops.reshape(x, (-1, features_dim)),
                keras.ops.reshape(self.W, (features_dim, 1)),
            ),
            (-1, step_dim),
        )

        if self.bias:
            eij += self.b

        eij = keras.ops.tanh(eij)

        a = keras.ops.exp(eij)

        if mask is not None:
            a *= keras.ops.cast(mask, K.floatx())

        a /= keras.ops.cast(
            keras.ops.sum(a, axis=1, keepdims=True) + K.epsilon(), K.floatx()
        )

        a = keras.ops.expand_dims(a, axis=-1)
        weighted_input = x * a
        return keras.ops.sum(weighted_input, axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape[0], self.features_dim

    def get_config(self):
        config = {'step_dim': self.step_dim, 'bias': self.bias}
        base_config = super(Attention, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))
