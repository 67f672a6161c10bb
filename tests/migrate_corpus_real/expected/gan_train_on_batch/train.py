"""Simple GAN on MNIST, discriminator and combined model on several GPUs.

Adapted from the usual Keras-GAN layout: D compiled on its own, then frozen
inside the combined G -> D model, both trained with train_on_batch.

    python train.py --iterations 30000 --batch-size 128 --gpus 2
"""
from __future__ import print_function

import argparse
import os

import numpy as np
from keras.datasets import mnist
from keras.layers import Input, Dense, Reshape, Flatten
from keras.layers import LeakyReLU
from keras.models import Sequential, Model
from keras.optimizers import Adam
from parallel_keras import multi_gpu_model

LATENT_DIM = 16


def build_generator(img_shape):
    model = Sequential()
    model.add(Dense(32, input_dim=LATENT_DIM))
    model.add(LeakyReLU(alpha=0.2))
    model.add(Dense(int(np.prod(img_shape)), activation='tanh'))
    model.add(Reshape(img_shape))
    noise = Input(shape=(LATENT_DIM,))
    img = model(noise)
    return Model(noise, img)


def build_discriminator(img_shape):
    model = Sequential()
    model.add(Flatten(input_shape=img_shape))
    model.add(Dense(32))
    model.add(LeakyReLU(alpha=0.2))
    model.add(Dense(1, activation='sigmoid'))
    img = Input(shape=img_shape)
    validity = model(img)
    return Model(img, validity)


def train(args):
    (X_train, _), (_, _) = mnist.load_data()
    X_train = X_train / 127.5 - 1.
    X_train = np.expand_dims(X_train, axis=3).astype('float32')
    img_shape = X_train.shape[1:]

    discriminator = build_discriminator(img_shape)
    parallel_discriminator = multi_gpu_model(discriminator, gpus=args.gpus)
    parallel_discriminator.compile(loss='binary_crossentropy',
                                   optimizer=Adam(learning_rate=0.0002, beta_1=0.5),
                                   metrics=['accuracy'])

    generator = build_generator(img_shape)
    z = Input(shape=(LATENT_DIM,))
    img = generator(z)
    # For the combined model we will only train the generator
    discriminator.trainable = False
    validity = discriminator(img)
    combined = Model(z, validity)
    parallel_combined = multi_gpu_model(combined, gpus=args.gpus)
    parallel_combined.compile(loss='binary_crossentropy',
                              optimizer=Adam(learning_rate=0.0002, beta_1=0.5))

    valid = np.ones((args.batch_size, 1))
    fake = np.zeros((args.batch_size, 1))
    for iteration in range(args.iterations):
        # Train the discriminator on a half real, half generated batch
        idx = np.random.randint(0, X_train.shape[0], args.batch_size)
        imgs = X_train[idx]
        noise = np.random.normal(0, 1, (args.batch_size, LATENT_DIM))
        gen_imgs = generator.predict(noise)
        d_loss_real = parallel_discriminator.train_on_batch(imgs, valid)
        d_loss_fake = parallel_discriminator.train_on_batch(gen_imgs, fake)
        d_loss = 0.5 * np.add(d_loss_real, d_loss_fake)

        # Train the generator (to have the discriminator label samples as valid)
        noise = np.random.normal(0, 1, (args.batch_size, LATENT_DIM))
        g_loss = parallel_combined.train_on_batch(noise, valid)
        print("%d [D loss: %f, acc.: %.2f%%] [G loss: %f]" % (
            iteration, d_loss[0], 100 * d_loss[1], g_loss))

    if not os.path.exists(args.save_dir):
        os.makedirs(args.save_dir)
    # parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
    #   only '.weights.h5' files (was 'gan_%d.h5').
    combined.save_weights(
        os.path.join(args.save_dir, 'gan_%d.weights.h5' % args.iterations)
    )


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--iterations', type=int, default=30000)
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--gpus', type=int, default=2)
    parser.add_argument('--save-dir', default='saved_model')
    train(parser.parse_args())
