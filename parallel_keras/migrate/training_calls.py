# SPDX-License-Identifier: Apache-2.0
"""Which arguments of a Keras 2 training call hold its data.

`model.fit`, `evaluate` and `predict` (and Keras 2's `*_generator` forms)
take their data first, as `x=` / `generator=`, and `fit` also as
`validation_data=`. The rules that wrap a project's data for Keras 3
(`rules/list_batches.py`, `rules/named_batches.py`) and the project scan
(`project.py`) read the same arguments.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from parallel_keras.migrate import syntax

METHODS = frozenset(
    {"fit", "fit_generator", "evaluate", "evaluate_generator", "predict", "predict_generator"}
)
DATA_KEYWORDS = ("x", "generator", "validation_data")


def data_arguments(call: cst.Call) -> list[cst.Arg]:
    """The arguments of `call` (a training call) that hold data."""
    keywords = [
        arg for arg in call.args if arg.keyword is not None and arg.keyword.value in DATA_KEYWORDS
    ]
    return keywords + syntax.positional(call)[:1]


def with_data_wrapped(
    call: cst.Call, wrapped: set[int], wrap: Callable[[cst.Arg], cst.Arg]
) -> cst.Call:
    """`call` with each argument whose id is in `wrapped` replaced by `wrap(argument)`."""
    return call.with_changes(args=[wrap(arg) if id(arg) in wrapped else arg for arg in call.args])
