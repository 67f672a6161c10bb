"""RetinaNet-style losses, normalised by the positive anchors of the whole batch."""
import tensorflow as tf
from keras import backend as K
import keras


def focal(alpha=0.25, gamma=2.0):
    def _focal(y_true, y_pred):
        labels = y_true[:, :, :-1]
        anchor_state = y_true[:, :, -1]  # -1 for ignore, 0 for background, 1 for object
        classification = y_pred

        alpha_factor = keras.ops.ones_like(labels, dtype=keras.backend.floatx()) * alpha
        alpha_factor = tf.where(keras.ops.equal(labels, 1), alpha_factor, 1 - alpha_factor)
        focal_weight = tf.where(keras.ops.equal(labels, 1), 1 - classification, classification)
        focal_weight = alpha_factor * focal_weight ** gamma
        cls_loss = focal_weight * keras.ops.binary_crossentropy(labels, classification)
        cls_loss = cls_loss * keras.ops.expand_dims(
            keras.ops.cast(keras.ops.not_equal(anchor_state, -1), K.floatx()), axis=-1
        )

        # compute the normalizer: the number of positive anchors in the batch
        normalizer = keras.ops.cast(
            keras.ops.sum(keras.ops.cast(keras.ops.equal(anchor_state, 1), K.floatx())), K.floatx()
        )
        normalizer = keras.ops.maximum(1.0, normalizer)
        return keras.ops.sum(cls_loss) / normalizer
    return _focal


def smooth_l1(sigma=3.0):
    sigma_squared = sigma ** 2

    def _smooth_l1(y_true, y_pred):
        regression_target = y_true[:, :, :-1]
        anchor_state = y_true[:, :, -1]
        positive = keras.ops.expand_dims(
            keras.ops.cast(keras.ops.equal(anchor_state, 1), K.floatx()), axis=-1
        )

        regression_diff = keras.ops.abs(y_pred - regression_target)
        regression_loss = tf.where(
            keras.ops.less(regression_diff, 1.0 / sigma_squared),
            0.5 * sigma_squared * keras.ops.power(regression_diff, 2),
            regression_diff - 0.5 / sigma_squared
        ) * positive

        normalizer = keras.ops.maximum(1.0, keras.ops.sum(positive))
        return keras.ops.sum(regression_loss) / normalizer
    return _smooth_l1
