"""Trains a VAE on MNIST on several GPUs.

    python train.py --epochs 50 --batch-size 128 --gpus 2
"""
import argparse

import numpy as np
from keras.datasets import mnist
from keras.losses import binary_crossentropy
from parallel_keras import multi_gpu_model

from vae import build_vae
import keras
import parallel_keras


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=50)
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--gpus', type=int, default=2)
    args = parser.parse_args()

    (x_train, _), (x_test, _) = mnist.load_data()
    original_dim = x_train.shape[1] * x_train.shape[2]
    x_train = np.reshape(x_train, [-1, original_dim]).astype('float32') / 255
    x_test = np.reshape(x_test, [-1, original_dim]).astype('float32') / 255

    vae = build_vae(original_dim)

    def reconstruction_loss(y_true, y_pred):
        return original_dim * binary_crossentropy(y_true, y_pred)

    parallel_vae = multi_gpu_model(vae, gpus=args.gpus)
    parallel_vae.compile(
        optimizer=parallel_keras.compat.keras2_optimizer(
            keras.optimizers.RMSprop
        )(),
        loss=reconstruction_loss,
    )
    parallel_vae.summary()
    parallel_vae.fit(x_train, x_train,
                     shuffle=True,
                     epochs=args.epochs,
                     batch_size=args.batch_size,
                     validation_data=(x_test, x_test))
    # parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
    #   only '.weights.h5' files (was 'vae_mlp_mnist.h5').
    vae.save_weights('vae_mlp_mnist.weights.h5')


if __name__ == '__main__':
    main()
