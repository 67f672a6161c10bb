"""Loads image/mask pairs in batches (a keras.utils.Sequence)."""
import numpy as np
from keras.utils import Sequence


class SegmentationSequence(Sequence):
    def __init__(self, images, masks, batch_size=8, shuffle=True):
        self.images = images
        self.masks = masks
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.indexes = np.arange(len(self.images))

    def __len__(self):
        return int(np.ceil(len(self.images) / float(self.batch_size)))

    def __getitem__(self, index):
        batch = self.indexes[index * self.batch_size:(index + 1) * self.batch_size]
        return self.images[batch], self.masks[batch]

    def on_epoch_end(self):
        if self.shuffle:
            np.random.shuffle(self.indexes)
