# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.seed_generators` (Keras 3.5 to 3.15)."""

import keras

from parallel_keras import _internals
from parallel_keras._internals import variables


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


def test_mirrored_replicas_start_each_run_in_new_threads_without_keras_state():
    """Why the seedless-op generator is set in each traced step, not once at
    `multi_gpu_model`: MirroredStrategy runs each `strategy.run` in replica
    threads it makes for that call (TF's mirrored_run.py, "Create these
    threads once instead of during every call"), and Keras's global state is
    per thread, so nothing set beforehand reaches them."""
    import threading

    import tensorflow as tf
    from keras.src.backend.common import global_state

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    global_state.set_global_attribute("parallel_keras_canary", "set before")
    seen = []

    def replica_fn():
        seen.append(
            (threading.current_thread(), global_state.get_global_attribute("parallel_keras_canary"))
        )
        return tf.constant(0)

    try:
        strategy.run(replica_fn)
        strategy.run(replica_fn)
    finally:
        global_state.set_global_attribute("parallel_keras_canary", None)
    threads = [thread for thread, _ in seen]
    assert len(seen) == 4 and len({id(thread) for thread in threads}) == 4
    assert threading.current_thread() not in threads
    assert [value for _, value in seen] == [None] * 4
