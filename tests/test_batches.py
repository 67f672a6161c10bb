# SPDX-License-Identifier: Apache-2.0
"""No replica computes on an empty slice; small and partial batches match one device.

These run with TensorFlow's default settings (oneDNN on), under which a
Conv2D given an empty batch returns a wrong shape.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import conv_bn_model, images

import parallel_keras
from parallel_keras import _internals
from parallel_keras.data_parallel import batches

ATOL = 1e-5


def _cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux `/proc/cpuinfo`; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def test_upstream_onednn_conv2d_still_mishandles_an_empty_batch():
    """Canary: when this fails, TensorFlow fixed the kernel.

    The wrong shape comes from oneDNN's AVX-512 Conv2D (seen on TF 2.21,
    Intel AVX-512); where oneDNN is off or the CPU has no AVX-512 (an AMD
    EPYC with AVX2 only), the kernel is right and a right shape says nothing
    about a fix, so the canary skips there. The workaround (no replica ever
    gets an empty slice, tested below) stays on everywhere.
    """
    conv = keras.layers.Conv2D(4, 3)
    try:
        shape = tuple(conv(np.zeros((0, 8, 8, 3), "float32")).shape)
    except tf.errors.InvalidArgumentError:
        shape = "error"  # the wrong shape meets the bias: "Incompatible shapes"
    if shape == (0, 6, 6, 4):
        if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0":
            pytest.skip("oneDNN is off (TF_ENABLE_ONEDNN_OPTS=0): its Conv2D does not run")
        if "avx512f" not in _cpu_flags():
            pytest.skip(
                "no AVX-512 on this CPU: oneDNN's AVX2 Conv2D handles an empty "
                "batch, so the upstream bug cannot show here"
            )
    assert shape != (0, 6, 6, 4)


@pytest.mark.parametrize("rows, replicas", [(1, 4), (3, 4), (6, 4), (10, 4), (5, 3)])
@pytest.mark.parametrize("static", [True, False])
def test_split_never_leaves_a_replica_empty(rows, replicas, static):
    dataset = tf.data.Dataset.from_tensors(
        (tf.range(rows, dtype=tf.float32)[:, None], tf.zeros([rows]))
    )
    if not static:
        dataset = dataset.unbatch().batch(rows)  # batch size unknown up front
    prepared = next(iter(batches.prepare_dataset(dataset, replicas)))
    keep = prepared.keep.numpy()
    # tf.distribute gives replica r rows [r*c, (r+1)*c) with c = ceil(n / N).
    c = -(-len(keep) // replicas)
    slices = [keep[r * c : (r + 1) * c] for r in range(replicas)]
    assert all(len(s) > 0 for s in slices)
    values = prepared.data[0].numpy()[:, 0]
    reported = np.concatenate([values[r * c : (r + 1) * c][s > 0] for r, s in enumerate(slices)])
    np.testing.assert_array_equal(reported, np.arange(rows))


@pytest.mark.parametrize("rows", [1, 3, 6, 9])
def test_predict_small_and_partial_batches_in_order(rows):
    x, _ = images(rows)
    reference = conv_bn_model(synchronized=False)
    template = conv_bn_model(synchronized=False)
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    expected = reference.predict(x, batch_size=4, verbose=0)
    np.testing.assert_allclose(parallel.predict(x, batch_size=4, verbose=0), expected, atol=ATOL)
    np.testing.assert_allclose(parallel.predict_on_batch(x), expected, atol=ATOL)


@pytest.mark.parametrize("batch_size", [3, 6, 7])
def test_training_on_small_and_partial_batches_matches_one_device(batch_size):
    # 22 rows: batches of 3 (all smaller than 4 replicas), of 6 (2/2/2/0 as
    # tf.distribute splits them) and of 7 (final batch of 1 row).
    x, y = images(22)
    reference = conv_bn_model(synchronized=True)
    reference.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    expected = reference.fit(x, y, batch_size=batch_size, shuffle=False, verbose=0).history
    template = conv_bn_model(synchronized=False)
    parallel = parallel_keras.multi_gpu_model(template, gpus=4, sync_batchnorm=True)
    parallel.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    history = parallel.fit(x, y, batch_size=batch_size, shuffle=False, verbose=0).history
    difference = max(
        float(np.abs(a - b).max()) for a, b in zip(reference.get_weights(), template.get_weights())
    )
    assert difference < ATOL
    for name in expected:
        np.testing.assert_allclose(history[name], expected[name], atol=1e-4)
    np.testing.assert_allclose(
        parallel.evaluate(x, y, batch_size=batch_size, verbose=0),
        reference.evaluate(x, y, batch_size=batch_size, verbose=0),
        atol=1e-4,
    )


@pytest.mark.parametrize("rows, expected", [(10, 10), (6, 24), (1, 4)])
def test_a_batch_size_known_up_front_keeps_static_shapes(rows, expected):
    # A dynamic batch dimension made an LSTM's step twice as slow.
    dataset = tf.data.Dataset.from_tensors((tf.zeros([rows, 3]), tf.zeros([rows])))
    spec = batches.prepare_dataset(dataset, 4).element_spec
    assert spec.data[0].shape.as_list() == [expected, 3]
    assert spec.keep.shape.as_list() == [expected]


def test_equal_static_slices_are_left_as_they_are():
    # Only copied (see the generator test below): no mask, same shapes.
    dataset = tf.data.Dataset.from_tensors((tf.zeros([8, 3]), tf.zeros([8])))
    assert batches.prepare_dataset(dataset, 4).element_spec == dataset.element_spec


def test_a_step_is_told_how_its_batch_was_split():
    """`unpack` says what `prepare_dataset` chose, so the step does not guess."""
    even = tf.data.Dataset.from_tensors((tf.zeros([8, 3]), tf.zeros([8])))
    (batch,) = list(batches.prepare_dataset(even, 4).map(lambda x, y: (x[:2], y[:2])))
    assert batches.unpack(batch).split is batches.Split.EQUAL
    tiled = tf.data.Dataset.from_tensors((tf.zeros([3, 3]), tf.zeros([3])))
    (batch,) = list(batches.prepare_dataset(tiled, 4))
    step = batches.unpack(batch)
    assert step.split is batches.Split.MARKED
    assert float(tf.reduce_sum(step.keep)) == 3.0
    assert step.batch_rows.numpy().tolist() == [12.0, 3.0]

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def unknown_rows(x):
        assert batches.unpack((x,)).split is batches.Split.AS_GIVEN
        return x

    unknown_rows(tf.zeros([2, 3]))


def test_a_batch_size_unknown_up_front_is_decided_per_batch():
    dataset = tf.data.Dataset.from_tensor_slices(tf.zeros([7, 3])).batch(4)
    prepared = list(batches.prepare_dataset(dataset, 4))
    # 4 rows split 1/1/1/1; the final 3 rows would leave a replica empty.
    assert [len(batch.keep) for batch in prepared] == [4, 12]


@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_a_validation_pydataset_gives_one_devices_val_loss_every_epoch():
    """A PyDataset (Keras 2's Sequence) restarts at its first batch each
    evaluation, on one device as on the replicas, whatever they read ahead."""
    rng = np.random.RandomState(0)
    x, y = rng.rand(16, 5).astype("float32"), rng.rand(16, 1).astype("float32")
    x_val, y_val = rng.rand(40, 5).astype("float32"), rng.rand(40, 1).astype("float32")

    class Validation(keras.utils.PyDataset):
        def __len__(self):
            return 5

        def __getitem__(self, index):
            return x_val[index * 8 : (index + 1) * 8], y_val[index * 8 : (index + 1) * 8]

    histories = []
    for replicated in (False, True):
        keras.utils.set_random_seed(2)
        template = keras.Sequential(
            [keras.Input((5,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)]
        )
        network = parallel_keras.multi_gpu_model(template, gpus=4) if replicated else template
        network.compile(keras.optimizers.SGD(0.1), "mse")
        histories.append(
            network.fit(
                x,
                y,
                batch_size=8,
                epochs=3,
                shuffle=False,
                verbose=0,
                validation_data=Validation(),
                validation_steps=2,
            ).history["val_loss"]
        )
    np.testing.assert_allclose(histories[1], histories[0], atol=1e-5)


def _on_64_byte_boundary(array: np.ndarray) -> np.ndarray:
    """A copy of `array` whose memory starts on a 64-byte boundary.

    TensorFlow hands a generator's NumPy batch to the pipeline without a
    copy when its memory is aligned for Eigen (64 bytes); NumPy aligns to
    16, so a user's array is shared like this in about one run in four,
    which made the corruption below look intermittent.
    """
    buffer = np.empty(array.nbytes + 64, np.uint8)
    start = -buffer.ctypes.data % 64
    aligned = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    aligned[...] = array
    return aligned


def _aligned_rows(rows: int, seed: int = 0):
    x = _on_64_byte_boundary(np.random.RandomState(seed).rand(rows, 4).astype("float32"))
    return x, _on_64_byte_boundary(x.sum(axis=1, keepdims=True))


def _cycle(x, y, batch: int = 16):
    def generator():
        while True:
            for start in range(0, len(x), batch):
                yield x[start : start + batch], y[start : start + batch]

    return generator


def _small_model() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )


def test_upstream_mirrored_fit_still_writes_into_an_aligned_generator_batch():
    """Canary for the copy in `batches._owned`: native MirroredStrategy `fit`
    (TF 2.21 / Keras 3.15) overwrites the first replica's targets in the
    user's array. When this fails, TensorFlow no longer does, and the copy
    can go."""
    x, y = _aligned_rows(48)
    y_before = y.copy()
    devices = [f"/cpu:{index}" for index in range(4)]
    # Its own collective keys: with the default ones it would own collective
    # instances another native strategy of this worker meets with other
    # shapes (tensorflow/tensorflow#61314).
    strategy = tf.distribute.MirroredStrategy(
        devices, cross_device_ops=_internals.collective_all_reduce(devices)
    )
    with strategy.scope():
        model = _small_model()
        model.compile(keras.optimizers.SGD(0.05), "mse")
    model.fit(_cycle(x, y)(), steps_per_epoch=3, epochs=1, verbose=0)
    # Only ever the first replica's 4 rows of a batch of 16 (the last
    # batch's, depending on when the step ends, not always).
    changed = set(np.flatnonzero(y[:, 0] != y_before[:, 0]).tolist())
    assert {0, 1, 2, 3} <= changed <= {0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35}


@pytest.mark.parametrize(
    "source, steps", [("generator", 3), ("generator", 2), ("pydataset", None), ("dataset", 3)]
)
@pytest.mark.slow  # 4-9 s on 2 cores: outside the fast tier
def test_epochs_from_a_generator_match_one_device_and_leave_the_arrays_unchanged(source, steps):
    """Every epoch from a generator (`steps_per_epoch` dividing its cycle or
    not), a PyDataset or `Dataset.from_generator` with a static batch, and
    its validation from a generator, match one device, and the user's
    arrays stay as they were.

    The first replica's slice of a shared (aligned) batch was a view of the
    user's memory, and TensorFlow's in-place ops (the loss's `y - y_pred`,
    then its gradient) wrote into it: the next epoch read corrupted targets.
    """
    x, y = _aligned_rows(48)
    x_val, y_val = _aligned_rows(32, seed=1)
    before = [array.copy() for array in (x, y, x_val, y_val)]

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, index):
            return x[index * 16 : (index + 1) * 16], y[index * 16 : (index + 1) * 16]

    def data():
        if source == "generator":
            return _cycle(x, y)()
        if source == "pydataset":
            return Batches()
        signature = (tf.TensorSpec([16, 4], tf.float32), tf.TensorSpec([16, 1], tf.float32))
        return tf.data.Dataset.from_generator(_cycle(x, y), output_signature=signature)

    weights, histories = [], []
    for replicated in (False, True):
        template = _small_model()
        network = parallel_keras.multi_gpu_model(template, gpus=4) if replicated else template
        network.compile(keras.optimizers.SGD(0.05), "mse")
        history = network.fit(
            data(),
            steps_per_epoch=steps,
            epochs=3,
            shuffle=False,
            verbose=0,
            validation_data=_cycle(x_val, y_val)(),
            validation_steps=1,
        ).history
        for array, original in zip((x, y, x_val, y_val), before):
            np.testing.assert_array_equal(array, original)
        weights.append(template.get_weights())
        histories.append(history)
    for expected, trained in zip(*weights):
        np.testing.assert_allclose(trained, expected, atol=ATOL)
    np.testing.assert_allclose(histories[1]["loss"], histories[0]["loss"], atol=1e-5)
    np.testing.assert_allclose(histories[1]["val_loss"], histories[0]["val_loss"], atol=1e-5)
