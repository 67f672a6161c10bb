import tensorflow as tf
from keras.layers import Lambda, concatenate
from keras.models import Model


def multi_gpu_model(model, gpus):
    def get_slice(data, i, parts):
        shape = tf.shape(data)
        size = shape[:1] // parts
        return data[i * size[0]:(i + 1) * size[0]]

    outputs_all = [[] for _ in model.outputs]
    for i in range(gpus):
        with tf.device('/gpu:%d' % i):
            with tf.name_scope('tower_%d' % i):
                inputs = []
                for x in model.inputs:
                    slice_i = Lambda(get_slice, arguments={'i': i, 'parts': gpus})(x)
                    inputs.append(slice_i)
                outputs = model(inputs)
                if not isinstance(outputs, list):
                    outputs = [outputs]
                for o in range(len(outputs)):
                    outputs_all[o].append(outputs[o])
    with tf.device('/cpu:0'):
        merged = [concatenate(o, axis=0) for o in outputs_all]
        return Model(model.inputs, merged)
