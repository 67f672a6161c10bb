"""Custom training loop with train_on_batch over all GPUs (Keras 2 style).

python train.py --iterations 10000 --gpus 4
"""
import argparse
import time

import numpy as np
from keras.layers import Input, Dense, BatchNormalization
from keras.models import Model
from keras.optimizers import Adam
from parallel_keras import multi_gpu_model
import keras


def build_generator(latent_dim=8):
    z = Input(shape=(latent_dim,))
    h = Dense(16, activation='relu')(z)
    h = BatchNormalization()(h)
    out = Dense(4, activation='tanh')(h)
    return Model(z, out)


def main(args):
    np.random.seed(0)
    model = build_generator()
    parallel = multi_gpu_model(model, gpus=args.gpus)
    parallel.compile(loss='mse', optimizer=Adam(learning_rate=0.0002, beta_1=0.5))
    targets = np.random.uniform(-1, 1, (args.batch_size, 4)).astype('float32')
    start = time.time()
    for iteration in range(args.iterations):
        noise = np.random.normal(0, 1, (args.batch_size, 8)).astype('float32')
        loss = parallel.train_on_batch(noise, targets)
        if iteration % 100 == 0:
            print(
                '%d [loss: %f] lr=%f (%.1fs)'
                % (
                    iteration,
                    loss,
                    keras.ops.convert_to_numpy(parallel.optimizer.learning_rate),
                    time.time() - start,
                )
            )
    # parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
    #   only '.weights.h5' files (was 'generator_%d.h5').
    parallel.template.save_weights('generator_%d.weights.h5' % args.iterations)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--iterations', type=int, default=10000)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--gpus', type=int, default=4)
    main(parser.parse_args())
