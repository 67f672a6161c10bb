# SPDX-License-Identifier: Apache-2.0
"""multi_gpu_model: same numbers as one device, shared weights, legacy errors."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import conv_bn_model, images

import parallel_keras
from parallel_keras import testing

# --- Models and data --------------------------------------------------------


def mlp(seed=2, name="mlp"):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(7, activation="tanh"), keras.layers.Dense(2)],
        name=name,
    )


def vectors(rows=40):
    rng = np.random.RandomState(3)
    return rng.rand(rows, 5).astype("float32"), rng.rand(rows, 2).astype("float32")


def max_weight_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a.get_weights(), b.get_weights()))


def make_optimizer(name):
    return {"sgd": lambda: keras.optimizers.SGD(0.1), "adam": lambda: keras.optimizers.Adam(1e-2)}[
        name
    ]()


def train_single_device(build, optimizer, x, y, batch_size, epochs=1):
    reference = build()
    reference.compile(make_optimizer(optimizer), "mse")
    reference.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
    return reference


# --- Same numbers as one device ----------------------------------------------


@pytest.mark.parametrize(
    "optimizer, gpus, batch_size, options",
    [
        ("sgd", 4, 16, {}),
        ("adam", 4, 16, {}),
        ("adam", 2, 16, {}),
        ("adam", 4, 10, {}),  # 10 rows on 4 replicas: 3/3/2/2
        ("sgd", 4, 3, {}),  # fewer rows than replicas
        ("adam", 3, 16, {"cpu_merge": False}),
        ("adam", 4, 16, {"cpu_relocation": True}),
    ],
)
def test_one_epoch_matches_one_device(optimizer, gpus, batch_size, options):
    x, y = images()
    reference = train_single_device(
        lambda: conv_bn_model(synchronized=True), optimizer, x, y, batch_size
    )
    template = conv_bn_model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=gpus, sync_batchnorm=True, **options)
    parallel.compile(make_optimizer(optimizer), "mse")
    parallel.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)

    assert max_weight_difference(reference, template) < 1e-5
    np.testing.assert_allclose(
        parallel.predict(x, batch_size=batch_size, verbose=0),
        reference.predict(x, verbose=0),
        atol=1e-5,
    )


def test_plain_batchnorm_normalizes_each_replica_slice():
    """Without sync_batchnorm each replica uses its own slice's statistics."""
    x, y = images()
    reference = train_single_device(conv_bn_model, "sgd", x, y, 16)
    template = conv_bn_model()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(make_optimizer("sgd"), "mse")
    parallel.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    difference = max_weight_difference(reference, template)
    assert 1e-5 < difference < 1e-1
    assert not any(
        layer.synchronized
        for layer in template.layers
        if isinstance(layer, keras.layers.BatchNormalization)
    )


def test_sync_batchnorm_sets_synchronized_on_nested_layers():
    inner = conv_bn_model()
    outer_input = keras.Input((8, 8, 3))
    outer = keras.Model(outer_input, inner(outer_input))
    parallel_keras.multi_gpu_model(outer, gpus=2, sync_batchnorm=True)
    assert inner.get_layer(index=2).synchronized is True


# --- Shared weights --------------------------------------------------------------


def test_template_and_parallel_share_variables():
    template = mlp()
    before = [id(v) for v in template.weights]
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    assert [id(v) for v in parallel.weights] == before
    for variable in template.weights:
        # One copy per replica device, none left behind on the host.
        assert len(variable.value.values) == 2


def test_fit_updates_template_weights():
    template = mlp()
    initial = template.get_weights()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile("sgd", "mse")
    parallel.fit(*vectors(), batch_size=8, epochs=1, verbose=0)
    for shared, mine in zip(template.get_weights(), parallel.get_weights()):
        np.testing.assert_array_equal(shared, mine)
    assert max(np.abs(a - b).max() for a, b in zip(initial, template.get_weights())) > 0


def test_set_weights_before_and_after_wrapping_reach_the_replicas(tmp_path):
    x, _ = vectors()
    donor = mlp(seed=9)
    template = mlp()
    template.set_weights(donor.get_weights())
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    np.testing.assert_allclose(
        parallel.predict(x, verbose=0), donor.predict(x, verbose=0), atol=1e-6
    )
    other = mlp(seed=11)
    template.set_weights(other.get_weights())
    np.testing.assert_allclose(
        parallel.predict(x, verbose=0), other.predict(x, verbose=0), atol=1e-6
    )
    path = str(tmp_path / "donor.weights.h5")
    donor.save_weights(path)
    template.load_weights(path)
    np.testing.assert_allclose(
        parallel.predict(x, verbose=0), donor.predict(x, verbose=0), atol=1e-6
    )
    for variable in template.weights:
        replicas = [component.numpy() for component in variable.value.values]
        for copy in replicas[1:]:
            np.testing.assert_array_equal(copy, replicas[0])


def test_fitting_template_and_parallel_alternately_stays_consistent():
    x, y = vectors()
    reference = mlp()
    reference.compile(keras.optimizers.SGD(0.05), "mse")
    template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.05), "mse")
    template.compile(keras.optimizers.SGD(0.05), "mse")
    for model in (parallel, template, parallel):
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        reference.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        assert max_weight_difference(reference, template) < 1e-5
    np.testing.assert_allclose(
        template.predict(x, verbose=0), parallel.predict(x, verbose=0), atol=1e-6
    )


def test_optimizer_built_outside_the_strategy_is_adopted():
    """The legacy pattern: an optimizer instance made before compile."""
    optimizer = keras.optimizers.Adam(1e-2)
    parallel = parallel_keras.multi_gpu_model(mlp(), gpus=2)
    parallel.compile(optimizer, "mse")
    parallel.fit(*vectors(), batch_size=8, epochs=1, verbose=0)
    assert parallel.optimizer is optimizer
    assert int(optimizer.iterations.numpy()) == 5


def test_rewrapping_moves_weights_and_retires_the_old_parallel_model():
    x, y = vectors()
    template = mlp()
    first = parallel_keras.multi_gpu_model(template, gpus=4)
    first.compile("sgd", "mse")
    first.fit(x, y, batch_size=8, verbose=0)
    trained = template.get_weights()
    second = parallel_keras.multi_gpu_model(template, gpus=2)
    for before, after in zip(trained, second.get_weights()):
        np.testing.assert_array_equal(before, after)
    with pytest.raises(RuntimeError, match="latest multi_gpu_model call"):
        first.fit(x, y, batch_size=8, verbose=0)
    second.compile("sgd", "mse")
    second.fit(x, y, batch_size=8, verbose=0)


# --- Batches -----------------------------------------------------------------------


class RecordFirstReplicaBatch(keras.layers.Layer):
    """Passes inputs through; records the batch size replica 0 received."""

    def build(self, input_shape):
        self.rows = self.add_weight(
            shape=(),
            initializer="zeros",
            trainable=False,
            aggregation="only_first_replica",
            name="rows",
        )

    def call(self, inputs):
        self.rows.assign(tf.cast(tf.shape(inputs)[0], "float32"))
        return inputs


@pytest.mark.parametrize("method", ["fit", "train_on_batch", "predict_on_batch"])
def test_global_batch_is_split_across_replicas(method):
    """Batch 64 on 2 devices: 32 rows each, as the legacy tutorials describe."""
    keras.utils.set_random_seed(0)
    recorder = RecordFirstReplicaBatch()
    inputs = keras.Input((5,))
    template = keras.Model(inputs, keras.layers.Dense(2)(recorder(inputs)))
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile("sgd", "mse")
    x, y = np.ones((64, 5), "float32"), np.ones((64, 2), "float32")
    if method == "fit":
        parallel.fit(x, y, batch_size=64, verbose=0)
    elif method == "train_on_batch":
        parallel.train_on_batch(x, y)
    else:
        assert parallel.predict_on_batch(x).shape == (64, 2)
    assert float(recorder.rows.numpy()) == 32.0


@pytest.mark.parametrize("rows, batch_size", [(10, 4), (7, 16), (3, 2)])
def test_predict_returns_rows_in_input_order(rows, batch_size):
    template = mlp()
    x = np.random.RandomState(5).rand(rows, 5).astype("float32")
    expected = template.predict(x, verbose=0)
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    np.testing.assert_allclose(
        parallel.predict(x, batch_size=batch_size, verbose=0), expected, atol=1e-5
    )
    np.testing.assert_allclose(parallel.predict_on_batch(x), expected, atol=1e-5)


# --- Works like the template ---------------------------------------------------------


def two_in_two_out(seed=4):
    keras.utils.set_random_seed(seed)
    left = keras.Input((3,), name="left")
    right = keras.Input((4,), name="right")
    merged = keras.layers.Concatenate()([left, right])
    hidden = keras.layers.Dense(6, activation="relu", name="hidden")(merged)
    score = keras.layers.Dense(1, name="score")(hidden)
    label = keras.layers.Dense(2, activation="softmax", name="label")(hidden)
    return keras.Model({"left": left, "right": right}, {"score": score, "label": label})


def two_in_two_out_data(rows=24):
    rng = np.random.RandomState(8)
    x = {"left": rng.rand(rows, 3).astype("float32"), "right": rng.rand(rows, 4).astype("float32")}
    y = {
        "score": rng.rand(rows, 1).astype("float32"),
        "label": keras.utils.to_categorical(rng.randint(0, 2, rows), 2),
    }
    return x, y


def compile_two_outputs(model):
    model.compile(
        keras.optimizers.SGD(0.1),
        loss={"score": "mse", "label": "categorical_crossentropy"},
        metrics={"label": ["accuracy"]},
    )


def test_dict_inputs_and_outputs_train_like_one_device():
    x, y = two_in_two_out_data()
    reference = two_in_two_out()
    compile_two_outputs(reference)
    reference.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    template = two_in_two_out()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    compile_two_outputs(parallel)
    history = parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    assert max_weight_difference(reference, template) < 1e-5
    assert "label_accuracy" in history.history
    expected = reference.predict(x, verbose=0)
    actual = parallel.predict(x, batch_size=8, verbose=0)
    for key in ("score", "label"):
        np.testing.assert_allclose(actual[key], expected[key], atol=1e-5)
    np.testing.assert_allclose(
        parallel.evaluate(x, y, batch_size=8, verbose=0),
        reference.evaluate(x, y, batch_size=8, verbose=0),
        atol=1e-5,
    )


def test_list_inputs_dataset_and_pydataset():
    keras.utils.set_random_seed(6)
    a, b = keras.Input((3,)), keras.Input((2,))
    out = keras.layers.Dense(1)(keras.layers.Concatenate()([a, b]))
    template = keras.Model([a, b], out)
    reference = keras.models.clone_model(template)
    reference.set_weights(template.get_weights())
    rng = np.random.RandomState(1)
    xa, xb, y = rng.rand(32, 3), rng.rand(32, 2), rng.rand(32, 1)

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            rows = slice(index * 8, (index + 1) * 8)
            return (xa[rows], xb[rows]), y[rows]

    dataset = tf.data.Dataset.from_tensor_slices(((xa, xb), y)).batch(8)
    reference.compile(keras.optimizers.SGD(0.1), "mse")
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    for data in (dataset, Batches()):
        reference.fit(data, epochs=1, shuffle=False, verbose=0)
        parallel.fit(data, epochs=1, shuffle=False, verbose=0)
    assert max_weight_difference(reference, template) < 1e-5


def test_on_batch_methods_match_one_device():
    x, y = vectors(8)
    reference = mlp()
    reference.compile(keras.optimizers.SGD(0.1), "mse")
    template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    parallel.compile(keras.optimizers.SGD(0.1), "mse")
    np.testing.assert_allclose(
        parallel.train_on_batch(x, y), reference.train_on_batch(x, y), atol=1e-6
    )
    assert max_weight_difference(reference, template) < 1e-6
    # One device's loss on this batch, by `evaluate`: up to Keras 3.10 its own
    # `test_on_batch` averages over every batch since `compile`.
    np.testing.assert_allclose(
        parallel.test_on_batch(x, y),
        reference.evaluate(x, y, batch_size=len(x), verbose=0),
        atol=1e-6,
    )


def test_optimizer_state_from_before_wrapping_carries_on_as_one_device():
    """A template trained (or resumed) with Adam, then wrapped: the moments
    and iterations carry on, in the parallel model's fit and the template's."""
    x, y = vectors()
    template = mlp()
    template.compile(keras.optimizers.Adam(1e-2), "mse")
    template.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=template.optimizer, loss="mse")
    parallel.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    template.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    reference = mlp()
    reference.compile(keras.optimizers.Adam(1e-2), "mse")
    reference.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    assert max_weight_difference(template, reference) < 1e-5
    assert int(template.optimizer.iterations.numpy()) == 15
    for got, want in zip(template.optimizer.variables, reference.optimizer.variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


def test_summary_layers_and_get_layer_show_the_template():
    template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    lines = []
    parallel.summary(print_fn=lambda line, **kwargs: lines.append(line))
    assert any("dense" in line for line in lines)
    # As in Keras 2: input, one slice layer per replica, template, merge.
    assert len(parallel.layers) == 1 + 4 + 1 + 1
    assert parallel.layers[-2] is template
    assert parallel.get_layer(index=-2) is template
    assert (
        parallel.layers[0] is template.layers[0]
        if isinstance(template.layers[0], keras.layers.InputLayer)
        else True
    )
    assert parallel.get_layer(template.name) is template
    assert parallel.get_layer(template.layers[0].name) is template.layers[0]
    assert "replicas=4" in repr(parallel)


def test_template_built_under_cpu_device_scope():
    """The legacy tutorials' Xception example builds the template under '/cpu:0'."""
    with tf.device("/cpu:0"):
        template = mlp()
    parallel = parallel_keras.multi_gpu_model(template, gpus=4)
    devices = {component.device for v in template.weights for component in v.value.values}
    assert len(devices) == 4
    x, y = vectors()
    parallel.compile(make_optimizer("sgd"), "mse")
    parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    reference = train_single_device(mlp, "sgd", x, y, 8)
    assert max_weight_difference(reference, template) < 1e-5


# --- Options map onto strategies -------------------------------------------------------


@pytest.mark.parametrize(
    "options, strategy_type, reduction",
    [
        ({}, tf.distribute.MirroredStrategy, "reduce on /cpu:0"),
        # cpu_merge chooses where outputs are concatenated, not the reduction.
        ({"cpu_merge": False}, tf.distribute.MirroredStrategy, "reduce on /cpu:0"),
        (
            {"cpu_relocation": True},
            tf.distribute.experimental.CentralStorageStrategy,
            "central storage on /cpu:0",
        ),
    ],
)
def test_legacy_options_choose_the_strategy(options, strategy_type, reduction):
    parallel = parallel_keras.multi_gpu_model(mlp(), gpus=2, **options)
    assert isinstance(parallel.strategy, strategy_type)
    assert str(parallel.gradient_reduction) == reduction
    assert f"gradient_reduction={reduction!r}" in repr(parallel)
    if options.get("cpu_relocation"):
        variable = parallel.template.weights[0]
        assert "CPU:0" in variable.value.device


_LEAK_PROBE = """
import gc, json
import psutil
import parallel_keras
parallel_keras.simulate_devices(4)
import keras
import numpy as np

rng = np.random.RandomState(3)
x, y = rng.rand(16, 5).astype("float32"), rng.rand(16, 2).astype("float32")
strategies = set()

def one_cell():
    keras.utils.set_random_seed(2)
    model = keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(7, activation="tanh"), keras.layers.Dense(2)])
    parallel = parallel_keras.multi_gpu_model(model, gpus=4)
    parallel.compile("sgd", "mse")
    parallel.fit(x, y, batch_size=8, verbose=0)
    strategies.add(id(parallel.strategy))

def current_rss_mb():
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20

for _ in range(3):
    one_cell()
after_warmup = current_rss_mb()
for _ in range(7):
    one_cell()
print(json.dumps({"strategies": len(strategies),
                  "growth_mb": current_rss_mb() - after_warmup}))
"""


@pytest.mark.subprocess
def test_repeated_calls_reuse_the_strategy_and_do_not_grow_memory():
    # Current RSS (not ru_maxrss, the peak since start) in a fresh process:
    # an earlier peak in the test session can no longer hide a leak.
    process = testing.run_python(_LEAK_PROBE)
    result = json.loads(process.stdout.strip().splitlines()[-1])
    assert result["strategies"] == 1
    # About 4 MB per call is TensorFlow's own function cache; a leaked
    # model, strategy or dataset per call would pass 100 MB over 7 calls.
    assert result["growth_mb"] < 100, f"current RSS grew {result['growth_mb']:.0f} MB over 7 calls"


@pytest.mark.parametrize("cpu_merge", [True, False])
def test_different_device_sets_follow_one_another(cpu_merge):
    """tensorflow/tensorflow#61314: a second device set used to fail."""
    x, y = vectors()
    for gpus in (4, 2, 3, 4):
        reference = train_single_device(mlp, "sgd", x, y, 8)
        template = mlp()
        parallel = parallel_keras.multi_gpu_model(template, gpus=gpus, cpu_merge=cpu_merge)
        parallel.compile(make_optimizer("sgd"), "mse")
        parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
        assert max_weight_difference(reference, template) < 1e-5


# --- Bad input: clear error, template untouched ------------------------------------------


def assert_untouched(template, weights_before):
    for before, after in zip(weights_before, template.get_weights()):
        np.testing.assert_array_equal(before, after)
    for variable in template.weights:
        assert not hasattr(variable.value, "values"), "template was relocated"


@pytest.mark.parametrize(
    "gpus, error, message",
    [
        (1, ValueError, r"`gpus >= 2`. Received: `gpus=1`.*template model directly"),
        (0, ValueError, r"`gpus >= 2`. Received: `gpus=0`"),
        (-2, ValueError, r"`gpus >= 2`. Received: `gpus=-2`"),
        (
            5,
            ValueError,
            r"we expect the following devices to be available: .*However this machine only has: .*Try reducing `gpus`",
        ),
        ([0, 7], ValueError, r"we expect the following devices.*'/gpu:7'"),
        ([0], ValueError, r"`len\(gpus\) >= 2`"),
        ([0, -1], ValueError, r"GPU ids must be >= 0"),
        ([1, 1], ValueError, r"more than once"),
        (["/cpu:0", "/device:CPU:0"], ValueError, r"more than once"),
        (2.0, TypeError, r"Received: gpus=2.0 of type float"),
        ("2", TypeError, r"Received: gpus='2' of type str"),
        (True, TypeError, r"of type bool"),
        ([0, 1.5], TypeError, r"Each entry of `gpus`"),
        (["/tpu:0", "/gpu:1"], ValueError, r"we expect the following devices"),
        (["not a device", "/gpu:1"], ValueError, r"is malformed"),
    ],
)
def test_bad_gpus_raise_and_leave_template_untouched(gpus, error, message):
    template = mlp()
    before = template.get_weights()
    with pytest.raises(error, match=message):
        parallel_keras.multi_gpu_model(template, gpus=gpus)
    assert_untouched(template, before)


def test_device_strings_and_gpu_id_lists_are_accepted():
    parallel = parallel_keras.multi_gpu_model(mlp(), gpus=["/cpu:1", "/gpu:3"])
    assert [d.split(":")[-1] for d in parallel.replica_devices] == ["1", "3"]
    assert len(parallel_keras.multi_gpu_model(mlp(), gpus=None).replica_devices) == 4


def test_not_a_keras_model():
    with pytest.raises(TypeError, match="needs a keras.Model.*Received: model of type Dense"):
        parallel_keras.multi_gpu_model(keras.layers.Dense(2), gpus=2)


def test_unbuilt_subclassed_model():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

    with pytest.raises(ValueError, match="needs a built model.*model.build"):
        parallel_keras.multi_gpu_model(Net(), gpus=2)


def test_built_subclassed_model_trains():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(4, activation="relu")
            self.out = keras.layers.Dense(2)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    def built_net():
        keras.utils.set_random_seed(0)
        net = Net()
        net(np.zeros((1, 5), "float32"))
        return net

    x, y = vectors()
    template = built_net()
    initial = template.get_weights()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(make_optimizer("sgd"), "mse")
    parallel.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    reference = train_single_device(built_net, "sgd", x, y, 8)
    # The template's own weights trained, and like one device.
    assert max(float(np.abs(a - b).max()) for a, b in zip(initial, template.get_weights())) > 1e-3
    assert max_weight_difference(reference, template) < 1e-5
    np.testing.assert_allclose(
        parallel.predict(x, verbose=0), reference.predict(x, verbose=0), atol=1e-5
    )


def test_parallel_model_is_not_a_template():
    parallel = parallel_keras.multi_gpu_model(mlp(), gpus=2)
    with pytest.raises(TypeError, match="multi_gpu_model\\(parallel_model.template"):
        parallel_keras.multi_gpu_model(parallel, gpus=2)


def test_bad_flag_types():
    template = mlp()
    before = template.get_weights()
    with pytest.raises(TypeError, match="cpu_merge=1"):
        parallel_keras.multi_gpu_model(template, gpus=2, cpu_merge=1)
    assert_untouched(template, before)


@pytest.mark.subprocess
def test_without_simulated_devices_the_error_says_to_simulate():
    process = testing.run_python(
        """
        import keras, parallel_keras
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        try:
            parallel_keras.multi_gpu_model(model, gpus=2)
        except ValueError as error:
            print("ERROR:", error)
        """,
    )
    assert "However this machine only has: ['/cpu:0']" in process.stdout
    assert "parallel_keras.simulate_devices(n)" in process.stdout
