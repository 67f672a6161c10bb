"""VAE building blocks: the reparameterisation trick, with its KL term."""
from keras.layers import Layer
from keras.layers import Input, Dense
from keras.models import Model
import keras
import tensorflow


class Sampling(Layer):
    """Draws z = mean + sigma * epsilon while training (the mean otherwise).

    Also adds the KL divergence of q(z|x) from the unit Gaussian to the
    model's loss.
    """

    def __init__(self, kl_weight=1.0, **kwargs):
        self.kl_weight = kl_weight
        super(Sampling, self).__init__(**kwargs)

    def call(self, inputs, training=None):
        z_mean, z_log_var = inputs
        kl_batch = -0.5 * keras.ops.sum(
            1 + z_log_var - keras.ops.square(z_mean) - keras.ops.exp(z_log_var), axis=-1
        )
        self.add_loss(self.kl_weight * keras.ops.mean(kl_batch))
        epsilon = tensorflow.random.normal(
            shape=keras.ops.shape(z_mean), dtype=keras.backend.floatx()
        )
        sampled = z_mean + keras.ops.exp(0.5 * z_log_var) * epsilon
        return (sampled if training else z_mean)

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        config = {'kl_weight': self.kl_weight}
        base_config = super(Sampling, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


def build_vae(original_dim, intermediate_dim=16, latent_dim=2):
    x = Input(shape=(original_dim,), name='encoder_input')
    h = Dense(intermediate_dim, activation='relu')(x)
    z_mean = Dense(latent_dim, name='z_mean')(h)
    z_log_var = Dense(latent_dim, name='z_log_var')(h)
    z = Sampling(name='z')([z_mean, z_log_var])
    decoder_h = Dense(intermediate_dim, activation='relu')
    decoder_mean = Dense(original_dim, activation='sigmoid')
    x_decoded_mean = decoder_mean(decoder_h(z))
    return Model(x, x_decoded_mean, name='vae_mlp')
