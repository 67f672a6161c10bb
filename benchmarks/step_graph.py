# SPDX-License-Identifier: Apache-2.0
"""What one training step runs, counted: a figure machine noise cannot move.

Step times on a shared machine move by several percent from round to round;
the operations a step is made of do not. Two approaches whose traced steps
hold the same operations differ in step time only by what runs around the
step (Python, the input pipeline), which `timing.paired_ratio` measures.
"""

from __future__ import annotations


def train_step_ops(model, dataset) -> int:
    """Operations in one distributed train step of `model` on `dataset`'s batches.

    The step is traced as `fit` runs it on each replica (`strategy.run` of
    the model's `train_step`, under the model's own strategy), with the
    functions it calls; nothing runs. The model must be compiled, and built
    (e.g. by one `fit` step) so that tracing creates no variables.
    """
    import tensorflow as tf

    strategy = model.distribute_strategy
    batches = strategy.experimental_distribute_dataset(dataset)
    step = tf.function(lambda data: strategy.run(model.train_step, args=(data,)))
    graph = step.get_concrete_function(batches.element_spec).graph
    library = graph.as_graph_def().library.function
    return len(graph.get_operations()) + sum(len(function.node_def) for function in library)
