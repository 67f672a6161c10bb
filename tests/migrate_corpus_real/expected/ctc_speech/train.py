"""Trains the CTC acoustic model on several GPUs (fit_generator, SGD + clipnorm).

    python train.py --epochs 20 --minibatch-size 32 --gpus 4
"""
import argparse
import os

from keras.callbacks import Callback
from keras.optimizers import SGD
from parallel_keras import multi_gpu_model

from data import AudioGenerator
from model import speech_model
import keras

ALPHABET = 5


class WeightsSaver(Callback):
    """Saves the template's weights after every epoch, as image_ocr.py did."""

    def __init__(self, template, output_dir):
        super(WeightsSaver, self).__init__()
        self.template = template
        self.output_dir = output_dir

    def on_epoch_end(self, epoch, logs=None):
        # parallel-keras migrate: Keras 3 needs this suffix: save_weights writes
        #   only '.weights.h5' files (was 'weights%02d.h5').
        self.template.save_weights(
            os.path.join(self.output_dir, 'weights%02d.weights.h5' % epoch)
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=20)
    parser.add_argument('--minibatch-size', type=int, default=32)
    parser.add_argument('--steps', type=int, default=1000)
    parser.add_argument('--gpus', type=int, default=4)
    parser.add_argument('--output-dir', default='ctc_weights')
    args = parser.parse_args()

    generator = AudioGenerator(minibatch_size=args.minibatch_size, alphabet=ALPHABET)
    model, predictor = speech_model(input_dim=6, output_dim=ALPHABET + 1,
                                    max_label_len=generator.max_label_len)
    parallel_model = multi_gpu_model(model, gpus=args.gpus)
    sgd = SGD(
        learning_rate=keras.optimizers.schedules.InverseTimeDecay(
            0.02, decay_steps=1, decay_rate=1e-6
        ),
        momentum=0.9,
        nesterov=True,
        clipnorm=5
    )
    # the loss calc occurs elsewhere, so use a dummy lambda func for the loss
    parallel_model.compile(loss={'ctc': lambda y_true, y_pred: y_pred}, optimizer=sgd)
    if not os.path.isdir(args.output_dir):
        os.makedirs(args.output_dir)
    parallel_model.fit(x=generator.next_train(),
                       steps_per_epoch=args.steps,
                       epochs=args.epochs,
                       callbacks=[WeightsSaver(model, args.output_dir)])


if __name__ == '__main__':
    main()
