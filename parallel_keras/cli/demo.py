"""`parallel-keras demo`: the seeds' multi-GPU workflow, end to end.

Builds a small CNN template on the CPU, replicates it with
`multi_gpu_model` over every GPU (or 4 simulated CPU devices where there is
none), trains a few epochs on synthetic data with the seeds' callbacks
(TensorBoard, ReduceLROnPlateau, EarlyStopping), saves through the template,
and reloads the file on one device in a fresh process to check its
predictions.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

_SIMULATED_DEVICES = 4
_TOLERANCE = 1e-5


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="Train a small CNN with multi_gpu_model, save, reload on one device.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--epochs", type=int, default=3, help="Training epochs.")
    parser.add_argument(
        "--samples", type=int, default=2048, help="Synthetic training samples."
    )
    parser.add_argument(
        "--batch_size", type=int, default=128, help="Global batch size."
    )
    parser.add_argument(
        "--gpus",
        type=int,
        default=None,
        help="Replicas (default: every GPU, or 4 simulated CPU devices).",
    )
    parser.add_argument(
        "--output_dir",
        default=None,
        help="Where to write logs and the model (default: a temporary folder).",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import parallel_keras

    # tf.distribute logs every reduction at INFO; the demo prints its own story.
    tf.get_logger().setLevel("WARNING")
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        parallel_keras.simulate_devices(args.gpus or _SIMULATED_DEVICES)
    import keras

    output_dir = args.output_dir or tempfile.mkdtemp(prefix="parallel_keras_demo_")
    os.makedirs(output_dir, exist_ok=True)

    with tf.device("/cpu:0"):
        template = _small_cnn(keras)
    parallel = parallel_keras.multi_gpu_model(template, gpus=args.gpus)
    kind = "GPU" if gpus else "simulated CPU"
    print(f"Replicating {template.name} ({template.count_params():,} parameters) "
          f"on {len(parallel.replica_devices)} {kind} devices:")
    for device in parallel.replica_devices:
        print(f"  {device}")

    x, y = _synthetic_data(np, args.samples)
    split = args.samples // 8
    parallel.compile(
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        loss=keras.losses.categorical_crossentropy,
        metrics=[keras.metrics.categorical_accuracy],
    )
    throughput = _Throughput(keras, samples=args.samples - split)
    # Keras 3 cannot tell the direction of a metric given as a function, so
    # the seeds' callbacks need mode="max" to run at all.
    callbacks = [
        keras.callbacks.TensorBoard(log_dir=os.path.join(output_dir, "logs")),
        keras.callbacks.ReduceLROnPlateau(
            monitor="categorical_accuracy", mode="max", patience=10, verbose=0
        ),
        keras.callbacks.EarlyStopping(
            monitor="categorical_accuracy", mode="max", patience=15, verbose=0
        ),
        throughput,
    ]
    history = parallel.fit(
        x[split:], y[split:],
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(x[:split], y[:split]),
        callbacks=callbacks,
        verbose=0,
    )
    for epoch, rate in enumerate(throughput.samples_per_second, start=1):
        accuracy = history.history["categorical_accuracy"][epoch - 1]
        val_loss = history.history["val_loss"][epoch - 1]
        print(f"Epoch {epoch}: {rate:,.0f} samples/s, "
              f"accuracy {accuracy:.3f}, val_loss {val_loss:.4f}")

    model_path = os.path.join(output_dir, "demo_cnn.keras")
    template.save(model_path)
    probe = x[:64]
    expected = parallel.predict(probe, verbose=0)
    probe_path = os.path.join(output_dir, "probe.npy")
    np.save(probe_path, probe)
    print(f"Saved the template to {model_path}")

    reloaded = _predict_in_fresh_process(model_path, probe_path, output_dir)
    difference = float(np.abs(reloaded - expected).max())
    ok = difference <= _TOLERANCE
    print(f"Reloaded on one device in a fresh process: max |difference| = "
          f"{difference:.2e} ({'OK' if ok else 'MISMATCH'}, tolerance {_TOLERANCE:g})")
    print(f"TensorBoard logs: {os.path.join(output_dir, 'logs')}")
    return 0 if ok else 1


def _small_cnn(keras):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(32, 3, padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(10, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="demo_cnn")


def _synthetic_data(np, samples: int):
    """Images whose class is written in their mean colour: learnable fast."""
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 10, samples)
    x = rng.rand(samples, 16, 16, 3).astype("float32") * 0.5
    x[..., 0] += (labels / 10.0)[:, None, None].astype("float32")
    y = np.eye(10, dtype="float32")[labels]
    return x, y


class _Throughput:
    """Keras callback measuring training samples per second per epoch."""

    def __new__(cls, keras, samples: int):
        class Throughput(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.samples_per_second = []

            def on_epoch_begin(self, epoch, logs=None):
                self._start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                elapsed = time.perf_counter() - self._start
                self.samples_per_second.append(samples / elapsed)

        return Throughput()


def _predict_in_fresh_process(model_path: str, probe_path: str, output_dir: str):
    import numpy as np

    from parallel_keras import testing

    result_path = os.path.join(output_dir, "reloaded_predictions.npy")
    testing.run_python(
        f"""
        import numpy as np, keras
        model = keras.models.load_model({model_path!r})
        np.save({result_path!r}, model.predict(np.load({probe_path!r}), verbose=0))
        """,
        env={"CUDA_VISIBLE_DEVICES": "-1"},
    )
    return np.load(result_path)
