import json
import keras

class Vocab(object):
    def __init__(self):
        self.words = {}
    def save(self, path):
        with open(path, 'w') as f:
            json.dump(self.words, f)

vocab_model = Vocab()
vocab_model.save('vocab.json')
model = keras.models.load_model('base_model.h5')
model.load_weights('x_weights.h5')
model.fit(x, y)
model.save_weights('x_weights.h5')
model.load_weights('x_weights.h5')
model.save('final')
