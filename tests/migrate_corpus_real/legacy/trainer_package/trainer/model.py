"""Model definition for the trainer package (Cloud ML Engine layout)."""
from keras import layers, models


def create_keras_model(input_dim, learning_rate):
    model = models.Sequential()
    model.add(layers.Dense(16, input_dim=input_dim, activation='relu'))
    model.add(layers.Dense(1, activation='sigmoid'))
    return model
