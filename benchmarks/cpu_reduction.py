# SPDX-License-Identifier: Apache-2.0
r"""Which gradient reduction is faster on simulated CPU devices.

`multi_gpu_model` follows `MirroredStrategy`'s own choice on GPUs and picks
the reduction measured faster on CPU devices (`strategies.CPU_REDUCTION`).
This measures the two candidates side by side in one process:
`MirroredStrategy` with `ReductionToOneDevice('/cpu:0')` against its
default on CPUs, a ring collective all-reduce. Same model, data, batch and
steps; short rounds of steps in a rotating order (`timing.TrainSteps`,
`timing.alternating_rounds`), compared round by round
(`timing.paired_ratio`: the median ratio with a 95% interval).

Run:
    python -m benchmarks cpu-reduction --replicas=4
"""

from __future__ import annotations

import json
import statistics

from absl import flags

from benchmarks import flag_spellings, timing

_REPLICAS = flags.DEFINE_integer("replicas", 4, "Simulated devices to replicate on.")
_BATCH_SIZE = flags.DEFINE_integer("batch-size", 128, "Global batch size.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed steps per round.")
_WARMUP_STEPS = flags.DEFINE_integer(
    "warmup-steps", 3, "Untimed steps of each model before the rounds."
)
_ROUNDS = flags.DEFINE_integer("rounds", 60, "Alternating rounds per reduction.")

flag_spellings.keep_old_spellings(_BATCH_SIZE, _WARMUP_STEPS)


def _models(keras):
    def mlp():
        return keras.Sequential(
            [
                keras.Input((256,)),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(10),
            ]
        ), (256,)

    def cnn():
        inputs = keras.Input((32, 32, 3))
        x = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
        x = keras.layers.Conv2D(32, 3, activation="relu")(x)
        x = keras.layers.GlobalAveragePooling2D()(x)
        return keras.Model(inputs, keras.layers.Dense(10)(x)), (32, 32, 3)

    def lstm():
        return keras.Sequential(
            [keras.Input((20, 16)), keras.layers.LSTM(64), keras.layers.Dense(10)]
        ), (20, 16)

    return {"mlp": mlp, "cnn": cnn, "lstm": lstm}


def measure() -> list[dict]:
    import keras
    import numpy as np
    import tensorflow as tf

    from parallel_keras import _internals

    devices = [f"/cpu:{i}" for i in range(_REPLICAS.value)]
    reductions = {
        "one_device": lambda: tf.distribute.ReductionToOneDevice("/cpu:0"),
        "ring": lambda: _internals.collective_all_reduce(
            devices, tf.distribute.experimental.CommunicationImplementation.RING
        ),
    }
    records = []
    for model_name, build in _models(keras).items():
        fitted = {}
        for name, cross_device_ops in reductions.items():
            strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=cross_device_ops())
            with strategy.scope():
                keras.utils.set_random_seed(0)
                model, shape = build()
                model.compile(keras.optimizers.SGD(0.01), "mse")
            fitted[name] = model
        rng = np.random.RandomState(0)
        batch = (
            rng.rand(_BATCH_SIZE.value, *shape).astype("float32"),
            rng.rand(_BATCH_SIZE.value, 10).astype("float32"),
        )
        dataset = tf.data.Dataset.from_tensors(batch).repeat()
        runs = {
            name: timing.TrainSteps(model, dataset, _WARMUP_STEPS.value)
            for name, model in fitted.items()
        }
        rounds = timing.alternating_rounds(runs, _ROUNDS.value, _STEPS.value)
        ratio = timing.paired_ratio(rounds["one_device"], rounds["ring"])
        records.append(
            {
                "model": model_name,
                "replicas": _REPLICAS.value,
                "global_batch_size": _BATCH_SIZE.value,
                "rounds": _ROUNDS.value,
                "timed_steps_per_round": _STEPS.value,
                "step_ms_median": {
                    name: statistics.median(values) * 1e3 for name, values in rounds.items()
                },
                "ratio_one_device_over_ring": ratio.median,
                "ratio_ci95": [ratio.low, ratio.high],
            }
        )
    return records


def main(argv):
    del argv
    import parallel_keras

    parallel_keras.simulate_devices(_REPLICAS.value)
    for record in measure():
        print(json.dumps(record))
