"""The widely copied make_parallel, towers over a list of GPU ids."""
import tensorflow as tf
from keras.layers import Lambda, concatenate
from keras.models import Model


def slice_batch(x, n_gpus, part):
    size = tf.shape(x)[0] // n_gpus
    return x[part * size:(part + 1) * size]


def to_multi_gpu(model, gpu_ids=(0, 1)):
    towers = []
    for g, gpu_id in enumerate(gpu_ids):
        with tf.device('/gpu:' + str(gpu_id)):
            x = Lambda(slice_batch, arguments={'n_gpus': len(gpu_ids), 'part': g})(model.input)
            towers.append(model(x))
    with tf.device('/cpu:0'):
        merged = concatenate(towers, axis=0)
    return Model(inputs=[model.input], outputs=merged)
