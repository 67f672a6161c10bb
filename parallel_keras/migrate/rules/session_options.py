# SPDX-License-Identifier: Apache-2.0
"""TF1 session set-up, and the TF 2 calls that replace it.

The vocabulary `sessions.py` rewrites with: which TF1 calls are flagged and
how to fix each, what each `ConfigProto`/`GPUOptions` option becomes as a
`tf.config` statement, and read-only checks on the syntax that sets them.
Nothing here records a change: the rule does.
"""

from __future__ import annotations

import libcst as cst

from parallel_keras.migrate import context, syntax

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

# TF1 call -> (what it becomes, {tf} the tensorflow module; its modern form).
# Each runs in TF 2: TensorFlow's own compat path, or parallel_keras.compat,
# which carries the GPU options over to tf.config and gives a session whose
# `run` returns eager values (sessions inside TF1 graph code run the graph).
COMPAT = {
    "tensorflow.Session": (
        "parallel_keras.compat.Session",
        "delete the session: TF 2 runs eagerly (tensor.numpy()); GPU options are tf.config calls",
    ),
    "tensorflow.InteractiveSession": (
        "parallel_keras.compat.Session",
        "delete it: tensors have values directly (tensor.numpy())",
    ),
    "tensorflow.ConfigProto": (
        "{tf}.compat.v1.ConfigProto",
        "tf.config.experimental.set_memory_growth(gpu, True) for allow_growth, "
        "tf.config.set_visible_devices for device lists",
    ),
    "tensorflow.GPUOptions": (
        "{tf}.compat.v1.GPUOptions",
        "tf.config.experimental.set_memory_growth(gpu, True)",
    ),
    "keras.backend.set_session": (
        "parallel_keras.compat.set_session",
        "delete it after moving the session's GPU options to tf.config calls",
    ),
    "keras.backend.get_session": (
        "parallel_keras.compat.get_session",
        "delete it: tensors and variables have values directly "
        "(tensor.numpy(), variable.assign(...))",
    ),
    "tensorflow.global_variables_initializer": (
        "{tf}.compat.v1.global_variables_initializer",
        "delete it: TF 2 initializes variables when it creates them",
    ),
    "tensorflow.local_variables_initializer": (
        "{tf}.compat.v1.local_variables_initializer",
        "delete it: TF 2 initializes variables when it creates them",
    ),
}

CONFIG = "tensorflow.ConfigProto"
GPU_OPTIONS = "tensorflow.GPUOptions"
SESSION = "tensorflow.Session"
SET_SESSION = "keras.backend.set_session"

# TF1 option -> TF 2 statement template ({tf} module, {value} expression).
_MEMORY_GROWTH = (
    "for physical_gpu in {tf}.config.list_physical_devices('GPU'):\n"
    "    {tf}.config.experimental.set_memory_growth(physical_gpu, True)\n"
)
OPTIONS = {
    "allow_growth": _MEMORY_GROWTH,
    "per_process_gpu_memory_fraction": _MEMORY_GROWTH,
    "visible_device_list": (
        "{tf}.config.set_visible_devices([gpu for gpu in "
        "{tf}.config.list_physical_devices('GPU') if gpu.name.rsplit(':', 1)[-1] "
        "in str({value}).replace(' ', '').split(',')], 'GPU')\n"
    ),
    "allow_soft_placement": "{tf}.config.set_soft_device_placement({value})\n",
    "log_device_placement": "{tf}.debugging.set_log_device_placement({value})\n",
    "intra_op_parallelism_threads": (
        "{tf}.config.threading.set_intra_op_parallelism_threads({value})\n"
    ),
    "inter_op_parallelism_threads": (
        "{tf}.config.threading.set_inter_op_parallelism_threads({value})\n"
    ),
}
# Options known but read on their own, with no template: `device_count`
# (only {'GPU': 0} is known) and `gpu_options` (a GPUOptions(...) call, read
# option by option).
OPTIONS_READ_APART = frozenset({"device_count", "gpu_options"})
MEMORY_FRACTION_ACTION = (
    "per_process_gpu_memory_fraction={value} became memory growth; for a hard "
    "cap, call tf.config.set_logical_device_configuration(gpu, "
    "[tf.config.LogicalDeviceConfiguration(memory_limit=MB)]) for each GPU "
    "before using TensorFlow, MB being {value} of the GPU's memory."
)


def options_known(ctx: context.Context, call: cst.Call) -> bool:
    """Whether every option of a `ConfigProto`/`GPUOptions` call has a TF 2 call."""
    for arg in call.args:
        if arg.keyword is None:  # Positional, *args or **kwargs: not known by name.
            return False
        name = arg.keyword.value
        if name not in OPTIONS and name not in OPTIONS_READ_APART:
            return False
        if name == "device_count" and device_count(arg.value) is None:
            return False
        if name == "gpu_options":
            options = arg.value
            if not (
                isinstance(options, cst.Call)
                and ctx.qualified_name(options.func) == GPU_OPTIONS
                and options_known(ctx, options)
            ):
                return False
    return True


def device_count(value: cst.BaseExpression) -> int | None:
    """The GPU count of `device_count={'GPU': n}`, when that is all it says."""
    if not isinstance(value, cst.Dict) or len(value.elements) != 1:
        return None
    element = value.elements[0]
    if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
        return None
    if element.key.evaluated_value != "GPU" or not isinstance(element.value, cst.Integer):
        return None
    return int(element.value.value)


def config_option(target: cst.BaseExpression) -> tuple[str, str] | None:
    """(config name, option) for `config.option` or `config.gpu_options.option`."""
    if not isinstance(target, cst.Attribute):
        return None
    owner = target.value
    if isinstance(owner, cst.Attribute) and owner.attr.value == "gpu_options":
        owner = owner.value
    if isinstance(owner, cst.Name):
        return owner.value, target.attr.value
    return None


def is_false(value: cst.BaseExpression) -> bool:
    """Whether an option's value is a literal False or 0."""
    return syntax.is_literal_false(value) or syntax.is_zero(value)


def is_cuda_visible_devices(target: cst.BaseAssignTargetExpression) -> bool:
    """Whether an assignment target is `os.environ['CUDA_VISIBLE_DEVICES']`."""
    return (
        isinstance(target, cst.Subscript)
        and syntax.dotted(target.value) == "os.environ"
        and len(target.slice) == 1
        and isinstance(target.slice[0].slice, cst.Index)
        and isinstance(target.slice[0].slice.value, cst.SimpleString)
        and target.slice[0].slice.value.evaluated_value == "CUDA_VISIBLE_DEVICES"
    )
