"""Entry point: python -m trainer.task --job-dir out --num-epochs 20"""
import argparse
import os

import keras
from parallel_keras import multi_gpu_model

from . import model
from .util import load_data
import parallel_keras
import parallel_keras.devices
import tensorflow


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--job-dir', type=str, default='job')
    parser.add_argument('--num-epochs', type=int, default=20)
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--learning-rate', type=float, default=.01)
    return parser.parse_args()


def train_and_evaluate(args):
    (train_x, train_y), (eval_x, eval_y) = load_data()
    keras_model = model.create_keras_model(train_x.shape[1], args.learning_rate)
    gpus = len(
        [
            device.name
            for device in tensorflow.config.list_logical_devices('GPU')
            or (
                tensorflow.config.list_logical_devices('CPU')
                if parallel_keras.devices.gpus_are_simulated()
                else []
            )
        ]
    )
    parallel_model = multi_gpu_model(keras_model, gpus=gpus)
    parallel_model.compile(
        loss='binary_crossentropy',
        optimizer=parallel_keras.compat.keras2_optimizer(keras.optimizers.RMSprop)(
            learning_rate=args.learning_rate
        ),
        metrics=['acc'],
    )
    os.makedirs(args.job_dir, exist_ok=True)
    # parallel-keras migrate: Keras 3 needs this suffix: a full-model
    #   checkpoint writes only '.keras' or '.h5' files (was
    #   'keras-{epoch:02d}.hdf5').
    checkpoint = keras.callbacks.ModelCheckpoint(
        os.path.join(args.job_dir, 'keras-{epoch:02d}.h5'),
        monitor='val_acc',
        mode='max',
        save_best_only=False,
    )
    parallel_model.fit(train_x, train_y, epochs=args.num_epochs,
                       batch_size=args.batch_size,
                       validation_data=(eval_x, eval_y), callbacks=[checkpoint])
    export_path = os.path.join(args.job_dir, 'keras_export')
    keras_model.save(export_path + '.h5')


if __name__ == '__main__':
    train_and_evaluate(get_args())
