"""Age and gender from face crops, one model, two outputs, several GPUs."""
import argparse
import os

import numpy as np
from keras.callbacks import ModelCheckpoint, CSVLogger
from keras.optimizers import SGD
from keras.utils import to_categorical
from parallel_keras import multi_gpu_model

from model import build_model


def get_args():
    parser = argparse.ArgumentParser(description="age/gender estimation")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--nb_epochs", type=int, default=30)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--output_path", type=str, default="checkpoints")
    return parser.parse_args()


def face_batches(images, ages, genders, batch_size):
    while True:
        for start in range(0, len(images) - batch_size + 1, batch_size):
            end = start + batch_size
            yield images[start:end], (ages[start:end], genders[start:end])


def main():
    args = get_args()
    rng = np.random.RandomState(0)
    images = rng.rand(32, 24, 24, 3).astype("float32")
    ages = rng.rand(32, 1).astype("float32")
    genders = to_categorical(rng.randint(0, 2, 32), 2)

    model = build_model()
    parallel_model = multi_gpu_model(model, gpus=args.gpus)
    parallel_model.compile(optimizer=SGD(learning_rate=0.01, momentum=0.9),
                           loss={"age": "mae", "gender": "categorical_crossentropy"},
                           loss_weights={"age": 0.1, "gender": 1.0})
    os.makedirs(args.output_path, exist_ok=True)
    callbacks = [CSVLogger(os.path.join(args.output_path, "history.csv"))]
    parallel_model.fit(face_batches(images, ages, genders, args.batch_size),
                       steps_per_epoch=len(images) // args.batch_size,
                       epochs=args.nb_epochs,
                       callbacks=callbacks)
    # With two outputs, Keras 2 kept the template third from the end.
    parallel_model.template.save(os.path.join(args.output_path, "age_gender.h5"))


if __name__ == "__main__":
    main()
