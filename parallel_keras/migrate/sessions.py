"""Flags: TF1 session code, which has no rewrite.

Sessions, `K.set_session` and in-process `tf.train.Server`s do not exist in
TF 2 / Keras 3. What replaces them depends on why they were there (GPU
memory options, a cluster), so they are flagged with the modern way, never
rewritten.
"""

from __future__ import annotations

from parallel_keras.migrate import engine
from parallel_keras.migrate import syntax

RULE = "TF1 sessions"

_CLUSTER = (
    "for training on several machines, start every worker with "
    "`parallel-keras launch` (it sets TF_CONFIG) and build the model under "
    "tf.distribute.MultiWorkerMirroredStrategy"
)
FLAGGED = {
    "tensorflow.Session": (
        "TF1 sessions do not exist in TF 2 (code runs eagerly)",
        f"delete the session; {_CLUSTER}.",
    ),
    "tensorflow.InteractiveSession": (
        "TF1 sessions do not exist in TF 2 (code runs eagerly)",
        "delete it; tensors have values directly (tensor.numpy()).",
    ),
    "tensorflow.ConfigProto": (
        "session options moved to tf.config",
        "use tf.config.experimental.set_memory_growth(gpu, True) for "
        "allow_growth and tf.config.set_visible_devices for device lists.",
    ),
    "tensorflow.GPUOptions": (
        "session options moved to tf.config",
        "use tf.config.experimental.set_memory_growth(gpu, True).",
    ),
    "keras.backend.set_session": (
        "Keras 3 has no session to set",
        f"delete it; {_CLUSTER}.",
    ),
    "keras.backend.get_session": (
        "Keras 3 has no session",
        "delete it: tensors and variables have values directly "
        "(tensor.numpy(), variable.assign(...)).",
    ),
    "tensorflow.train.Server": (
        "tf.train.Server clusters are not how TF 2 trains on several machines",
        f"{_CLUSTER}.",
    ),
    "tensorflow.global_variables_initializer": (
        "variables are initialized when created in TF 2",
        "delete it.",
    ),
}


class SessionRule(engine.Rule):
    """Flags each call of a TF1 session API with what replaces it."""

    name = RULE

    def leave_Call(self, ctx, original, updated):
        qualified = ctx.qualified_name(original.func) or ""
        for name, (message, action) in FLAGGED.items():
            if qualified == name or qualified.startswith(name + "."):
                ctx.flag(
                    original, RULE, f"`{syntax.dotted(original.func)}`: {message}", action
                )
                break
        return updated
