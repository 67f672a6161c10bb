"""Model and data shared by the worker scripts and the tests that check them."""

import numpy as np

GLOBAL_BATCH = 16
ROWS = 64  # 4 steps per epoch.
LEARNING_RATE = 0.05


def data():
    return data_rows(ROWS)


def data_rows(rows):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32") + 0.1).astype(
        "float32"
    )
    return x, y


def build_template():
    import keras  # pylint: disable=g-import-not-at-top

    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )


def optimizer():
    import keras  # pylint: disable=g-import-not-at-top

    return keras.optimizers.SGD(LEARNING_RATE)
