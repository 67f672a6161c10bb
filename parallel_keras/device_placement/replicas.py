# SPDX-License-Identifier: Apache-2.0
"""A placed template inside `multi_gpu_model`: each replica on its own device.

Keras 2 scripts build the template under `tf.device('/cpu:0')` (the legacy
docs' advice, to keep the weights in host memory), and `migrate` turns that
block into `parallel_keras.device('/cpu:0')` when it contains layer calls,
which pins those calls to the CPU wherever the model runs. Keras 2's
`multi_gpu_model` then called the template once per GPU inside
`tf.device('/gpu:i')`, and its functional replay did not re-enter the scopes
the template was built in: the block placed only the variables, and each
tower's forward and backward pass ran on that tower's GPU.

The rule here is Keras 2's, for every placement: inside a replica of a
`multi_gpu_model`, each layer call of the template runs on the replica's
device, whatever device it was built for (`tf.device`, `parallel_keras.device`
or `place_branches`), and the variables stay where the strategy keeps them.
A `tf.device` scope written inside a layer's own `call` still applies, as it
did in Keras 2's towers. Outside the replicas (the template called directly,
not through the strategy) the recorded placement keeps its meaning, as the
template's own graph kept it in Keras 2.

Model parallelism inside each replica is therefore not combined with data
parallelism: a template whose branches were placed on several devices on
purpose gets a warning naming them when it is wrapped.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from absl import logging

from parallel_keras import _internals
from parallel_keras.device_placement import runtime


def recorded_devices(model: keras.Model) -> set[str]:
    """The devices the layer calls of `model` (nested models too) asked for."""
    found: set[str] = set()
    seen: set[int] = set()

    def visit(layer):
        if id(layer) in seen:
            return
        seen.add(id(layer))
        if _internals.is_functional(layer):
            for _, _, node in runtime.layer_calls(layer):
                name = runtime.requested_device(node)
                if name is not None:
                    found.add(name)
        for inner in getattr(layer, "layers", ()):
            visit(inner)

    visit(model)
    return found


def follow_replica_devices(
    template: keras.Model,
    strategy: tf.distribute.Strategy,
    replica_devices: tuple[str, ...] | list[str],
) -> None:
    """Runs the template's layer calls on each replica's device in `strategy`.

    Args:
        template: The model `multi_gpu_model` wraps.
        strategy: The strategy whose replicas run it.
        replica_devices: The replicas' devices, for the log.
    """
    runtime.follow_replica_devices(strategy)
    asked = recorded_devices(template)
    if not asked:
        return
    # Names as written: resolving could raise here, after the template was
    # already wrapped (a placed device this process lacks fails when called).
    if len(asked) == 1 and "cpu" in next(iter(asked)).lower():
        logging.info(
            "multi_gpu_model: template %r was built under device %s; as in "
            "Keras 2, each replica runs it on its own device (%s).",
            template.name,
            min(asked),
            ", ".join(replica_devices),
        )
        return
    logging.warning(
        "multi_gpu_model: template %r has layer calls placed on %s. As in "
        "Keras 2's multi_gpu_model, each replica runs the whole template on "
        "its own device (%s), so that placement applies only when the "
        "template is called outside the parallel model. To keep model "
        "parallelism, train the placed template without multi_gpu_model.",
        template.name,
        sorted(asked),
        ", ".join(replica_devices),
    )
