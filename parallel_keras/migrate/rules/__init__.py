# SPDX-License-Identifier: Apache-2.0
"""The rewrite families of `parallel-keras migrate`, one module each.

Every module here defines `Rule` subclasses (`parallel_keras.migrate.context`)
and imports only that, `syntax`, and a sibling rule whose helpers it shares;
none imports the engine, which sits above them and applies `default_rules`.
"""

from __future__ import annotations

from parallel_keras.migrate import context
from parallel_keras.migrate.rules import backend_ops
from parallel_keras.migrate.rules import batch_shapes
from parallel_keras.migrate.rules import callback_args
from parallel_keras.migrate.rules import checkpoints
from parallel_keras.migrate.rules import devices
from parallel_keras.migrate.rules import generators
from parallel_keras.migrate.rules import gpu_count
from parallel_keras.migrate.rules import image_data
from parallel_keras.migrate.rules import imports
from parallel_keras.migrate.rules import keras1_merge
from parallel_keras.migrate.rules import layer_api
from parallel_keras.migrate.rules import legacy_api
from parallel_keras.migrate.rules import model_api
from parallel_keras.migrate.rules import metric_names
from parallel_keras.migrate.rules import multi_gpu
from parallel_keras.migrate.rules import numpy2
from parallel_keras.migrate.rules import optimizers
from parallel_keras.migrate.rules import requirements
from parallel_keras.migrate.rules import reset_states
from parallel_keras.migrate.rules import saving
from parallel_keras.migrate.rules import sessions
from parallel_keras.migrate.rules import template_access
from parallel_keras.migrate.rules import template_savers
from parallel_keras.migrate.rules import tf1_names
from parallel_keras.migrate.rules import training_api


def default_rules() -> list[context.Rule]:
    """Every rewrite family, in the order they apply to a node.

    Returns:
        Fresh rule instances (rules keep per-file state, so one list serves
        one file).
    """
    return [
        multi_gpu.MultiGpuModelRule(),
        template_savers.TemplateSaverRule(),
        checkpoints.CheckpointRule(),
        checkpoints.MonitorModeRule(),
        metric_names.MetricKeyRule(),
        optimizers.OptimizerRule(),
        training_api.GeneratorMethodsRule(),
        generators.GeneratorRule(),
        saving.SavePathRule(),
        devices.DeviceScopeRule(),
        imports.ImportPathRule(),
        legacy_api.LegacyApiRule(),
        template_access.TemplateAccessRule(),
        backend_ops.BackendOpsRule(),
        image_data.ImageDataRule(),
        gpu_count.GpuCountRule(),
        sessions.SessionRule(),
        # TF1 names, Keras 3 layer/model idioms, NumPy 2.
        tf1_names.Tf1NameRule(),
        numpy2.NumPy2Rule(),
        layer_api.LayerApiRule(),
        model_api.ModelApiRule(),
        callback_args.CallbackArgsRule(),
        requirements.RequirementsRule(),
        # Keras 2 idioms met in unseen scripts: batch shapes, reset_states, Keras 1 merge.
        batch_shapes.BatchInputShapeRule(),
        keras1_merge.Keras1MergeRule(),
        reset_states.ResetStatesRule(),
    ]
