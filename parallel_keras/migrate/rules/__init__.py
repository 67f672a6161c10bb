# SPDX-License-Identifier: Apache-2.0
"""The rewrite families of `parallel-keras migrate`, one module each.

Every module here defines `Rule` subclasses (`parallel_keras.migrate.context`)
and imports only that, `syntax`, and a sibling rule whose helpers it shares;
none imports the engine, which sits above them and applies `default_rules`.
What a rule learns for another travels in `ctx.facts`; each rule declares the
facts it writes and reads (`Rule.writes`/`Rule.reads`), and the engine checks
the order below against them (`context.fact_order_problems`).
"""

from __future__ import annotations

from parallel_keras.migrate import context
from parallel_keras.migrate.rules import (
    backend_ops,
    batch_shapes,
    call_variables,
    callback_args,
    checkpoints,
    devices,
    generators,
    gpu_count,
    image_data,
    imports,
    keras1_layers,
    keras1_merge,
    keras2_callbacks,
    keyword_only,
    layer_api,
    legacy_api,
    legacy_interfaces,
    libraries,
    list_batches,
    metric_names,
    model_api,
    multi_gpu,
    named_batches,
    numpy2,
    optimizer_subclasses,
    optimizer_values,
    optimizers,
    requirements,
    reset_states,
    saving,
    sessions,
    shared_optimizers,
    symbolic_losses,
    target_tensors,
    template_access,
    template_savers,
    tf1_names,
    tower_builders,
    training_api,
)


def default_rules() -> list[context.Rule]:
    """Every rewrite family, in the order they apply to a node.

    Returns:
        Fresh rule instances (rules keep per-file state, so one list serves
        one file).
    """
    return [
        multi_gpu.MultiGpuModelRule(),
        tower_builders.TowerBuilderRule(),
        template_savers.TemplateSaverRule(),
        checkpoints.CheckpointRule(),
        checkpoints.MonitorModeRule(),
        metric_names.MetricKeyRule(),
        optimizers.OptimizerRule(),
        optimizer_values.OptimizerValueRule(),
        optimizer_subclasses.OptimizerSubclassRule(),
        shared_optimizers.SharedOptimizerRule(),
        training_api.GeneratorMethodsRule(),
        named_batches.NamedBatchesRule(),
        generators.GeneratorRule(),
        # After the generator rule: it wraps a Sequence it cycles (repeat_sequence).
        list_batches.ListBatchesRule(),
        saving.SavePathRule(),
        devices.DeviceScopeRule(),
        imports.ImportPathRule(),
        legacy_api.LegacyApiRule(),
        legacy_interfaces.LegacyInterfacesRule(),
        template_access.TemplateAccessRule(),
        backend_ops.BackendOpsRule(),
        image_data.ImageDataRule(),
        gpu_count.GpuCountRule(),
        sessions.SessionRule(),
        # TF1 names, Keras 3 layer/model idioms, NumPy 2.
        tf1_names.Tf1NameRule(),
        numpy2.NumPy2Rule(),
        libraries.LibrariesRule(),
        layer_api.LayerApiRule(),
        # Before the model-API rule, which flags what this one cannot rewrite.
        symbolic_losses.SymbolicLossRule(),
        model_api.ModelApiRule(),
        keyword_only.KeywordOnlyRule(),
        target_tensors.TargetTensorsRule(),
        call_variables.CallVariableRule(),
        callback_args.CallbackArgsRule(),
        keras2_callbacks.Keras2CallbackRule(),
        requirements.RequirementsRule(),
        # Keras 2 idioms met in unseen scripts: batch shapes, reset_states, Keras 1 merge.
        batch_shapes.BatchInputShapeRule(),
        keras1_merge.Keras1MergeRule(),
        keras1_layers.Keras1LayerArgsRule(),
        keras1_layers.InitialWeightsRule(),
        reset_states.ResetStatesRule(),
    ]
