# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras demo`: the legacy tutorials' multi-GPU workflow, end to end.

Builds a small CNN template on the CPU, replicates it with
`multi_gpu_model` over every GPU (a single GPU is split in two; without
a GPU, 4 simulated CPU devices), trains a few epochs on synthetic data with
the legacy tutorials' callbacks (TensorBoard, ReduceLROnPlateau, EarlyStopping), saves
through the template, and reloads the file on one device in a fresh process
to check its predictions. The output folder is a temporary one, removed at the end
unless --keep (or --output-dir) is given.
"""

from __future__ import annotations

import argparse
import os
import time

from parallel_keras.cli import errors

_SIMULATED_CPU_DEVICES = 4
_TOLERANCE = 1e-5


def _replica_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, received {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(
            "data parallelism needs at least 2 replicas. Received: "
            f"--gpus {value}. Leave --gpus out to use every GPU (or simulated "
            "devices)."
        )
    return value


def _at_least_one(flag: str):
    """An argparse type: an int >= 1, the message naming `flag`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= 1, received {text!r}. Pass e.g. {flag} 3."
            ) from None
        if value < 1:
            raise argparse.ArgumentTypeError(
                f"must be at least 1. Received: {flag} {value}. Pass e.g. {flag} 3."
            )
        return value

    return parse


def _output_dir_problem(output_dir: str | None) -> str | None:
    """Why --output-dir cannot be used, checked before TensorFlow starts."""
    if output_dir is None:
        return None
    current = os.path.abspath(output_dir)
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    if not os.path.isdir(current):
        return (
            "--output-dir must be a folder (created if missing). Received: "
            f"--output-dir {output_dir}, but {current} is a regular file. "
            "Pass a folder path."
        )
    try:
        # Created here, before TensorFlow starts, so a folder that cannot be
        # made costs no start-up and shows no traceback.
        os.makedirs(output_dir, exist_ok=True)
    except OSError as error:
        return (
            "--output-dir must be a folder this process can create and write. "
            f"Received: --output-dir {output_dir} ({error.strerror or error}). "
            "Pass a folder you can write to, or leave --output-dir out."
        )
    if not os.access(output_dir, os.W_OK | os.X_OK):
        return (
            "--output-dir must be a folder this process can write. Received: "
            f"--output-dir {output_dir}, which is read-only for this user. "
            "Pass a folder you can write to, or leave --output-dir out."
        )
    return None


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="Train a small CNN with multi_gpu_model, save, reload on one device.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--epochs", type=_at_least_one("--epochs"), default=3, help="Training epochs."
    )
    parser.add_argument(
        "--samples",
        type=_at_least_one("--samples"),
        default=2048,
        help="Synthetic training samples.",
    )
    parser.add_argument(
        "--batch-size", type=_at_least_one("--batch-size"), default=128, help="Global batch size."
    )
    parser.add_argument(
        "--gpus",
        type=_replica_count,
        default=None,
        help="Replicas, at least 2 (default: every GPU; 2 halves of a single "
        "GPU; 4 simulated CPU devices without a GPU).",
    )
    parser.add_argument(
        "--output-dir",
        default=None,
        help="Where to write logs and the model; kept (default: a temporary "
        "folder, removed at the end unless --keep).",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="Keep the temporary output folder (logs, model) after the demo.",
    )
    # The spellings of earlier releases, still accepted but not shown.
    parser.add_argument(
        "--batch_size",
        type=_at_least_one("--batch_size"),
        dest="batch_size",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--output_dir", dest="output_dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    parser.set_defaults(run=run)


def device_plan(physical_gpus: int, gpus: int | None) -> tuple[str | None, int, str]:
    """`(device type to simulate or None, replicas, what to tell the user)`.

    Data parallelism needs two devices: a machine without a GPU rehearses on
    simulated CPU devices, and a single GPU is split into logical GPUs.

    Raises:
        errors.UsageError: `gpus` asks for more of several GPUs than exist.
    """
    if physical_gpus == 0:
        replicas = gpus or _SIMULATED_CPU_DEVICES
        return (
            "CPU",
            replicas,
            (
                f"No GPU found: simulating {replicas} devices on the CPU "
                "(parallel_keras.simulate_devices)."
            ),
        )
    if physical_gpus == 1:
        replicas = gpus or 2
        return (
            "GPU",
            replicas,
            (
                "One GPU found: data parallelism needs at least two devices, so "
                f"the GPU is split into {replicas} logical GPUs "
                f'(parallel_keras.simulate_devices({replicas}, "GPU")).'
            ),
        )
    if gpus is not None and gpus > physical_gpus:
        raise errors.UsageError(
            "--gpus must be at most the number of GPUs found. Received: "
            f"--gpus {gpus}, and this machine has {physical_gpus} GPUs. Pass "
            f"--gpus {physical_gpus} or fewer, or leave --gpus out to use every GPU."
        )
    replicas = gpus or physical_gpus
    return None, replicas, f"{physical_gpus} GPUs found: replicating on {replicas}."


def run(args) -> int:
    # Here, not at the top: `parallel-keras --help` imports this module.
    import shutil
    import tempfile

    problem = _output_dir_problem(args.output_dir)
    if problem:
        raise errors.UsageError(problem)
    import numpy as np
    import tensorflow as tf

    import parallel_keras

    simulate, replicas, message = device_plan(
        len(tf.config.list_physical_devices("GPU")), args.gpus
    )
    print(message, flush=True)
    if simulate is not None:
        parallel_keras.simulate_devices(replicas, simulate)
    import keras

    keep = args.keep or args.output_dir is not None
    output_dir = args.output_dir or tempfile.mkdtemp(prefix="parallel_keras_demo_")
    os.makedirs(output_dir, exist_ok=True)
    print(f"Output folder: {output_dir}", flush=True)
    try:
        return _train_save_reload(np, keras, tf, parallel_keras, args, replicas, output_dir)
    finally:
        if keep:
            print(f"Kept {output_dir}.")
        else:
            shutil.rmtree(output_dir, ignore_errors=True)
            print(f"Removed {output_dir} (pass --keep to keep it).")


def _train_save_reload(np, keras, tf, parallel_keras, args, replicas, output_dir) -> int:
    with tf.device("/cpu:0"):
        template = _small_cnn(keras)
    # `device_plan` checked --gpus; a refusal here is the demo failing.
    with errors.raised_as(errors.CommandFailed, ValueError):
        parallel = parallel_keras.multi_gpu_model(template, gpus=replicas)
    print(
        f"Replicating {template.name} ({template.count_params():,} parameters) "
        f"on {len(parallel.replica_devices)} devices: "
        f"{', '.join(_short(name) for name in parallel.replica_devices)}",
        flush=True,
    )

    x, y = _synthetic_data(np, args.samples)
    split = args.samples // 8
    parallel.compile(
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        loss=keras.losses.categorical_crossentropy,
        metrics=[keras.metrics.categorical_accuracy],
    )
    # Keras 3 cannot tell the direction of a metric given as a function, so
    # the legacy tutorials' callbacks need mode="max" to run at all.
    callbacks = [
        keras.callbacks.ReduceLROnPlateau(
            monitor="categorical_accuracy", mode="max", patience=10, verbose=0
        ),
        keras.callbacks.EarlyStopping(
            monitor="categorical_accuracy", mode="max", patience=15, verbose=0
        ),
        _EpochReport(keras, samples=args.samples - split, epochs=args.epochs),
    ]
    # Keras's TensorBoard callback needs the `tensorboard` package, which
    # TF 2.21 no longer installs and the library does not need.
    import importlib.util

    if importlib.util.find_spec("tensorboard") is not None:
        log_dir = os.path.join(output_dir, "logs")
        callbacks.insert(0, keras.callbacks.TensorBoard(log_dir=log_dir))
        print(f"TensorBoard logs: {log_dir}")
    else:
        print("TensorBoard logs: skipped (`pip install tensorboard` to write them).")
    print(
        f"Training {args.epochs} epoch(s) on {args.samples - split:,} samples "
        "(the first epoch includes tracing)...",
        flush=True,
    )
    parallel.fit(
        x[split:],
        y[split:],
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(x[:split], y[:split]),
        callbacks=callbacks,
        verbose=0,
    )

    model_path = os.path.join(output_dir, "demo_cnn.keras")
    template.save(model_path)
    probe = x[:64]
    expected = parallel.predict(probe, verbose=0)
    probe_path = os.path.join(output_dir, "probe.npy")
    np.save(probe_path, probe)
    print(f"Saved the template to {model_path}")

    print("Reloading it on one device in a fresh Python process...", flush=True)
    reloaded = _predict_in_fresh_process(model_path, probe_path, output_dir)
    difference = float(np.abs(reloaded - expected).max())
    ok = difference <= _TOLERANCE
    print(
        f"Reloaded on one device in a fresh process: max |difference| = "
        f"{difference:.2e} ({'OK' if ok else 'MISMATCH'}, tolerance {_TOLERANCE:g})"
    )
    if not ok:
        raise errors.CommandFailed(
            "the template reloaded on one device must predict what the "
            f"parallel model predicted (within {_TOLERANCE:g}). Received: max "
            f"|difference| = {difference:.2e}. Keep --output-dir and report "
            "it with this output: it is a bug."
        )
    return errors.EXIT_OK


def _short(device_name: str) -> str:
    return device_name.rpartition("device:")[2] or device_name


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


class _EpochReport:
    """Keras callback printing one line per epoch as it ends."""

    def __new__(cls, keras, samples: int, epochs: int):
        class EpochReport(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self._start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                logs = logs or {}
                rate = samples / (time.perf_counter() - self._start)
                print(
                    f"Epoch {epoch + 1}/{epochs}: {rate:,.0f} samples/s, "
                    f"accuracy {logs.get('categorical_accuracy', float('nan')):.3f}, "
                    f"val_loss {logs.get('val_loss', float('nan')):.4f}",
                    flush=True,
                )

        return EpochReport()


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
