"""Feeds (features, transcript) batches in the dict form the CTC model takes."""
import numpy as np


class AudioGenerator(object):
    def __init__(self, n_samples=32, frames=20, n_feats=6, alphabet=5, max_label_len=4,
                 minibatch_size=8, seed=0):
        rng = np.random.RandomState(seed)
        self.features = rng.rand(n_samples, frames, n_feats).astype('float32')
        self.texts = rng.randint(0, alphabet, (n_samples, max_label_len))
        self.text_lengths = rng.randint(1, max_label_len + 1, n_samples)
        self.frames = frames
        self.max_label_len = max_label_len
        self.minibatch_size = minibatch_size
        self.cur_index = 0

    def get_batch(self, index, size):
        rows = slice(index, index + size)
        inputs = {
            'the_input': self.features[rows],
            'the_labels': self.texts[rows].astype('float32'),
            'input_length': np.full((size, 1), self.frames, dtype='int64'),
            'label_length': self.text_lengths[rows].reshape(size, 1).astype('int64'),
        }
        outputs = {'ctc': np.zeros([size])}  # dummy data for dummy loss function
        return inputs, outputs

    def next_train(self):
        while 1:
            ret = self.get_batch(self.cur_index, self.minibatch_size)
            self.cur_index += self.minibatch_size
            if self.cur_index + self.minibatch_size > len(self.features):
                self.cur_index = 0
            yield ret
