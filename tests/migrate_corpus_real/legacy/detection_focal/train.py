"""A tiny single-shot detector (RetinaNet head) trained on several GPUs.

    python train.py --epochs 50 --batch-size 16 --gpus 4
"""
import argparse

import numpy as np
from keras.layers import Input, Conv2D, Reshape, Activation
from keras.models import Model
from keras.optimizers import Adam
from keras.utils import multi_gpu_model

from losses import focal, smooth_l1

NUM_CLASSES = 3
NUM_ANCHORS = 2


def detector(image_size=16):
    image = Input(shape=(image_size, image_size, 3))
    x = Conv2D(8, 3, strides=2, padding='same', activation='relu')(image)
    x = Conv2D(8, 3, strides=2, padding='same', activation='relu')(x)
    regression = Conv2D(NUM_ANCHORS * 4, 3, padding='same')(x)
    regression = Reshape((-1, 4), name='regression')(regression)
    classification = Conv2D(NUM_ANCHORS * NUM_CLASSES, 3, padding='same')(x)
    classification = Reshape((-1, NUM_CLASSES))(classification)
    classification = Activation('sigmoid', name='classification')(classification)
    return Model(inputs=image, outputs=[regression, classification])


def fake_annotations(n, anchors, seed=0):
    rng = np.random.RandomState(seed)
    images = rng.rand(n, 16, 16, 3).astype('float32')
    state = rng.choice([-1, 0, 1], size=(n, anchors, 1), p=[0.1, 0.7, 0.2]).astype('float32')
    labels = np.eye(NUM_CLASSES)[rng.randint(0, NUM_CLASSES, (n, anchors))] * (state == 1)
    boxes = rng.normal(size=(n, anchors, 4)).astype('float32')
    return images, [np.concatenate([boxes, state], -1), np.concatenate([labels, state], -1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=50)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--gpus', type=int, default=4)
    args = parser.parse_args()

    model = detector()
    anchors = model.output_shape[0][1]
    images, targets = fake_annotations(32, anchors)
    training_model = multi_gpu_model(model, gpus=args.gpus)
    training_model.compile(
        loss={'regression': smooth_l1(), 'classification': focal()},
        optimizer=Adam(lr=1e-5, clipnorm=0.001))
    training_model.fit(images, targets, batch_size=args.batch_size, epochs=args.epochs)
    model.save('retinanet_final.h5')


if __name__ == '__main__':
    main()
