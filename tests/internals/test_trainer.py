# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.trainer` (Keras 3.5 to 3.15).

Each fails loudly when an upgrade changes what Keras's trainer does that
`_internals.trainer` relies on, or when the first-batch symbolic-build
defect it works around is fixed (so the workaround can go).
"""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.tensorflow import trainer as keras_tf_trainer

from parallel_keras import _internals
from parallel_keras._internals import trainer, variables


def _compiled_two_output_model() -> keras.Model:
    inputs = keras.Input((2,))
    model = keras.Model(
        inputs,
        {
            "a": keras.layers.Dense(1, name="a")(inputs),
            "b": keras.layers.Dense(1, name="b")(inputs),
        },
    )
    model.compile("sgd", {"a": "mse", "b": "mae"}, metrics={"a": ["mae"]})
    return model


def test_keras_default_steps_and_metric_order_helpers():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    assert _internals.is_keras_default_step(type(model), "train_step")
    assert _internals.flatten_metrics_in_order(model, {"mae": 2.0, "loss": 1.0}) == [1.0, 2.0]
    assert _internals.loss_tracker(model) is not None


def test_is_keras_default_step_sees_an_override():
    """`TensorFlowTrainer.train_step` & co. are still what a model inherits."""
    for name in ("train_step", "test_step", "predict_step"):
        assert callable(getattr(keras_tf_trainer.TensorFlowTrainer, name)), name
        assert _internals.is_keras_default_step(keras.Model, name), name

    class CustomStep(keras.Model):
        def train_step(self, data):
            return {}

    assert not _internals.is_keras_default_step(CustomStep, "train_step")
    assert _internals.is_keras_default_step(CustomStep, "test_step")


def test_flatten_metrics_in_order_follows_the_models_metrics():
    """`Trainer._flatten_metrics_in_order` still orders logs as `model.metrics`
    (compile metrics expanded by their own, unprefixed names), then any other
    key sorted: a per-output metric `a_mae` sorts with the rest."""
    model = _compiled_two_output_model()
    x, y = np.ones((4, 2), "float32"), {"a": np.ones((4, 1)), "b": np.ones((4, 1))}
    logs = model.train_on_batch(x, y, return_dict=True)
    assert sorted(logs) == ["a_loss", "a_mae", "b_loss", "loss"]
    logs = {**logs, "extra": 9.0}
    assert _internals.flatten_metrics_in_order(model, logs) == [
        logs["loss"],
        logs["a_loss"],
        logs["b_loss"],
        logs["a_mae"],
        9.0,
    ]


def test_output_loss_trackers_are_a_mean_per_output():
    """`CompileLoss.metrics` (via `_compile_loss`) holds one `Mean` per output,
    updated by the step; `_loss_tracker` is the total loss's `Mean`."""
    model = _compiled_two_output_model()
    assert _internals.output_loss_trackers(keras.Sequential()) == []
    x, y = np.ones((4, 2), "float32"), {"a": np.zeros((4, 1)), "b": np.zeros((4, 1))}
    model.train_on_batch(x, y)
    trackers = _internals.output_loss_trackers(model)
    assert len(trackers) == 2
    assert all(isinstance(tracker, keras.metrics.Mean) for tracker in trackers)
    assert all(float(tracker.count.numpy()) > 0 for tracker in trackers)
    assert isinstance(_internals.loss_tracker(model), keras.metrics.Mean)


def test_trainer_and_optimizer_capture_the_strategy_at_construction():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    outside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    outside_optimizer = keras.optimizers.SGD()
    with strategy.scope():
        inside_model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        inside_optimizer = keras.optimizers.SGD()
    assert _internals.model_strategy(outside_model) is None
    assert _internals.model_strategy(inside_model) is strategy
    assert _internals.optimizer_strategy(outside_optimizer) is not strategy
    assert _internals.optimizer_strategy(inside_optimizer) is strategy
    for name in ("train_function", "test_function", "predict_function"):
        assert hasattr(inside_model, name)


def test_upstream_symbolic_build_still_fails_on_uneven_batches():
    """Remove SymbolicBuildFromLocalReplica when this starts failing."""
    assert hasattr(keras.Model, "_maybe_symbolic_build")
    assert hasattr(keras.Model, "_symbolic_build")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddN"):
        model.fit(np.ones((16, 2)), np.ones((16, 1)), batch_size=16, verbose=0)


def test_fit_reads_initial_epoch_and_calls_train_function_per_step():
    """Keras `fit` starts at `model._initial_epoch` and calls
    `model.train_function(iterator)` once per step (`skip_train_steps`)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    assert hasattr(model, "_initial_epoch")
    x = np.ones((8, 2), "float32")
    y = np.ones((8, 1), "float32")
    steps = []

    class Resume(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            _internals.set_initial_epoch(self.model, 2)
            _internals.skip_train_steps(self.model, 3)

        def on_train_batch_end(self, batch, logs=None):
            steps.append(int(self.model.optimizer.iterations.numpy()))

    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[Resume()])
    assert history.epoch == [2]
    # Four batches: three only consumed, one trained.
    assert steps == [0, 0, 0, 1]


def test_keras_metrics_names_still_lump_compiled_metrics():
    """keras-team/keras#21487: `metrics_names` lists compiled metrics as one
    'compile_metrics', so `ParallelModel.metrics_names` lists them itself (as
    Keras 2 did). When this fails, Keras lists them: defer to it."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    model.evaluate(np.ones((4, 2), "float32"), np.full((4, 3), 1 / 3, "float32"), verbose=0)
    assert model.metrics_names == ["loss", "compile_metrics"]


def test_keras_clips_before_the_optimizers_all_reduce():
    """`_clip_gradients` and `_all_reduce_sum_gradients` still exist on the TF
    optimizer; `clip_after_all_reduce` moves the clip after the sum."""
    optimizer = keras.optimizers.SGD(1.0, clipvalue=2.0)
    assert callable(optimizer._clip_gradients) and callable(optimizer._all_reduce_sum_gradients)
    _internals.clip_after_all_reduce(optimizer)
    variable = keras.Variable([1.0, 1.0])
    optimizer.apply_gradients([(tf.constant([-3.0, 3.0]), variable)])
    np.testing.assert_allclose(variable.numpy(), [3.0, -1.0])


def test_keras_global_seed_generator_is_per_thread():
    """Seedless random ops draw from a thread-local generator (so each replica
    thread would make its own inside the traced step)."""
    import threading

    from keras.src.random import seed_generator

    generators = []
    thread = threading.Thread(
        target=lambda: generators.append(seed_generator.global_seed_generator())
    )
    thread.start()
    thread.join()
    assert generators[0] is not seed_generator.global_seed_generator()


def test_central_storage_metric_updates_in_replica_context_double_count():
    """Keras's `assign_add` is `assign(self + value)`: on CentralStorageStrategy's
    replicas a second update adds N * old. When this fails, upstream changed
    and `correct_summed_assigns` must go.

    Keras 3.5-3.7 never pass a metric's "sum" aggregation to its tf.Variable
    (`variables._INITIALIZE_SHAPES`): created under the strategy it is NONE,
    and an update on the replicas raises. There parallel_keras relocates the
    metric variables once built (`symbolic_build_from_local_replica`), after
    which they double count as on Keras 3.8+."""
    strategy = tf.distribute.experimental.CentralStorageStrategy(
        compute_devices=["/cpu:0", "/cpu:1"], parameter_device="/cpu:0"
    )
    assert _internals.sums_replica_assigns(strategy)
    with strategy.scope():
        total = keras.metrics.Sum()
        total.update_state(0.0)

    def update_function():
        return tf.function(lambda: strategy.run(lambda: total.update_state(1.0)))

    if variables.initialize_passes_aggregation():  # Keras 3.8+.
        assert _internals.replica_aggregation(total.total) == "sum"
    else:  # Keras 3.5-3.7.
        assert _internals.replica_aggregation(total.total) == "none"
        with pytest.raises(ValueError, match="aggregation"):
            update_function()()
        assert _internals.relocate_variables(total.variables, strategy) == len(total.variables)
        assert _internals.replica_aggregation(total.total) == "sum"
    update = update_function()
    update()
    update()
    assert float(total.result()) == 2.0 * 2.0 + 2.0  # one device of sums: 4.0


def test_epoch_iterators_iterate_their_distributed_dataset_over_the_adapters():
    """`read_python_data_per_step` replaces `TFEpochIterator._distributed_dataset`
    after `__init__`: every epoch must iterate that attribute, made from its
    data adapter's `get_tf_dataset()`; the Python adapters end with a
    `_PrefetchDataset` (removed by `epoch_iterator_dataset`), and Keras's
    generator adapter re-yields the batches it peeked at."""
    from keras.src.trainers.data_adapters import generator_data_adapter

    init = inspect.getsource(keras_tf_trainer.TFEpochIterator.__init__)
    assert "self._distributed_dataset = dataset" in init
    if "get_tf_dataset()" not in init:  # Keras 3.5: through _get_iterator(), called here.
        assert "dataset = self._get_iterator()" in init
        getter = inspect.getsource(keras_tf_trainer.TFEpochIterator._get_iterator)
        assert "get_tf_dataset()" in getter
    iterating = inspect.getsource(keras_tf_trainer.TFEpochIterator)
    assert "self._distributed_dataset" in iterating.split("def _get_iterator", 1)[-1]

    def batches():
        for index in range(4):
            yield np.full((2, 1), index, "float32"), np.zeros((2, 1), "float32")

    iterator = keras_tf_trainer.TFEpochIterator(
        x=batches(), distribute_strategy=tf.distribute.get_strategy()
    )
    assert trainer.is_python_data(iterator)
    dataset = iterator.data_adapter.get_tf_dataset()
    assert type(dataset).__name__ == "_PrefetchDataset"
    assert type(trainer.epoch_iterator_dataset(iterator)).__name__ != "_PrefetchDataset"
    # Each new iterator starts again with the 2 batches peeked at (Keras
    # 3.15: `generator` is a function); Keras 3.5 kept one stream.
    adapter = generator_data_adapter.GeneratorDataAdapter(batches())
    first = [int(x[0, 0]) for x, _ in adapter.get_tf_dataset()]
    again = [int(x[0, 0]) for x, _ in adapter.get_tf_dataset()]
    assert first == [0, 1, 2, 3]
    assert again == ([0, 1] if callable(adapter.generator) else [])


def test_steps_take_their_batches_from_a_python_iterator_one_by_one():
    """`python_data` hands Keras's train/test functions a plain Python
    iterator. Keras 3.7+ runs one step per batch taken from it in a `zip`;
    3.5-3.6 trace `next(iterator)` (read once), where it is not used."""
    if not trainer.steps_take_python_iterators():
        source = inspect.getsource(keras_tf_trainer.TensorFlowTrainer.make_train_function)
        assert "data = next(iterator)" in source
        return
    source = inspect.getsource(keras_tf_trainer.TensorFlowTrainer._make_function)
    assert "tf.data.Iterator, tf.distribute.DistributedIterator" in source
    assert "zip(range(self.steps_per_execution),iterator)" in "".join(source.split())


def test_layers_keep_their_seed_generators_with_an_unaggregated_state():
    """Dropout's `SeedGenerator` sits in `Layer._seed_generators`, its state's
    tf.Variable created unaggregated (what `replicate_seed_generators`
    changes): on Keras 3.8+ its Keras aggregation is "none"; Keras 3.5-3.7
    say "mean" but never pass it to the tf.Variable."""
    layer = keras.layers.Dropout(0.5)
    (generator,) = layer._seed_generators
    assert isinstance(generator, keras.random.SeedGenerator)
    assert _internals.replica_aggregation(generator.state) == "none"
    if variables.initialize_passes_aggregation():  # Keras 3.8+.
        assert generator.state.aggregation == "none"
    else:  # Keras 3.5-3.7.
        assert generator.state.aggregation == "mean"
    model = keras.Sequential([keras.Input((2,)), layer])
    assert layer in model._flatten_layers(include_self=True, recursive=True)


def test_child_layers_of_a_model_and_of_a_wrapper_layer():
    inner = keras.layers.LSTM(2)
    wrapper = keras.layers.Bidirectional(inner)
    model = keras.Sequential([keras.Input((3, 2)), wrapper])
    assert _internals.child_layers(model) == [wrapper]
    # Keras tracks a wrapper's sublayers only privately (`Layer._layers`).
    assert len(_internals.child_layers(wrapper)) == 2
    assert all(isinstance(child, keras.layers.LSTM) for child in _internals.child_layers(wrapper))


def test_the_multi_step_loop_stops_at_the_data_end_or_runs_past_it():
    """Keras 3.7+: `_make_function` loops over `get_next_as_optional` (stops
    at the data's end). Keras 3.5-3.6: `next(iterator)` `steps_per_execution`
    times, which `require_multi_step_support` refuses for a partial epoch."""
    trainer_class = keras_tf_trainer.TensorFlowTrainer
    if hasattr(trainer_class, "_make_function"):  # Keras 3.7+.
        assert trainer._multi_step_stops_at_data_end()
        assert "get_next_as_optional" in inspect.getsource(trainer_class._make_function)
    else:  # Keras 3.5-3.6.
        assert not trainer._multi_step_stops_at_data_end()
        source = inspect.getsource(trainer_class.make_train_function)
        assert "for _ in range(self.steps_per_execution):" in source
        assert "get_next_as_optional" not in source
