"""A Keras 2 project's own multi-GPU class, in the style of Mask R-CNN's parallel_model.py."""
import tensorflow as tf
import keras.layers as KL
import keras.models as KM


class ParallelModel(KM.Model):
    """Splits each batch over the GPUs, runs a tower of the model on each, merges."""

    def __init__(self, keras_model, gpu_count):
        self.inner_model = keras_model
        self.gpu_count = gpu_count
        merged_outputs = self.make_parallel()
        super(ParallelModel, self).__init__(inputs=self.inner_model.inputs,
                                            outputs=merged_outputs)

    def make_parallel(self):
        input_slices = {name: tf.split(x, self.gpu_count)
                        for name, x in zip(self.inner_model.input_names,
                                           self.inner_model.inputs)}
        output_names = self.inner_model.output_names
        outputs_all = [[] for _ in self.inner_model.outputs]
        for i in range(self.gpu_count):
            with tf.device('/gpu:{}'.format(i)):
                with tf.name_scope('tower_%d' % i):
                    inputs = [KL.Lambda(lambda s, n=name: input_slices[n][i])(tensor)
                              for name, tensor in zip(self.inner_model.input_names,
                                                      self.inner_model.inputs)]
                    outputs = self.inner_model(inputs)
                    if not isinstance(outputs, list):
                        outputs = [outputs]
                    for l, o in enumerate(outputs):
                        outputs_all[l].append(o)
        with tf.device('/cpu:0'):
            return [KL.Concatenate(axis=0, name=name)(outputs)
                    for outputs, name in zip(outputs_all, output_names)]
