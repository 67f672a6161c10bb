"""Acoustic model: BiGRU over spectrogram frames, CTC loss in a Lambda layer."""
from keras.layers import Input, Dense, Lambda, Bidirectional, GRU, TimeDistributed
from keras.models import Model
import keras


def ctc_lambda_func(args):
    y_pred, labels, input_length, label_length = args
    return keras.ops.expand_dims(
        keras.ops.ctc_loss(
            labels,
            keras.ops.log(y_pred + keras.backend.epsilon()),
            keras.ops.cast(keras.ops.squeeze(label_length, -1), 'int32'),
            keras.ops.cast(keras.ops.squeeze(input_length, -1), 'int32'),
            mask_index=y_pred.shape[-1] - 1
        ),
        1
    )


def speech_model(input_dim, output_dim, max_label_len, units=8, use_cudnn=True):
    rnn = GRU if use_cudnn else GRU
    input_data = Input(name='the_input', shape=(None, input_dim))
    x = TimeDistributed(Dense(units, activation='relu'), name='frames')(input_data)
    x = Bidirectional(rnn(units, return_sequences=True), merge_mode='sum')(x)
    y_pred = TimeDistributed(Dense(output_dim, activation='softmax'), name='softmax')(x)

    labels = Input(name='the_labels', shape=[max_label_len], dtype='float32')
    input_length = Input(name='input_length', shape=[1], dtype='int64')
    label_length = Input(name='label_length', shape=[1], dtype='int64')
    loss_out = Lambda(ctc_lambda_func, output_shape=(1,), name='ctc')(
        [y_pred, labels, input_length, label_length])
    model = Model(inputs=[input_data, labels, input_length, label_length], outputs=loss_out)
    return model, Model(inputs=input_data, outputs=y_pred)
