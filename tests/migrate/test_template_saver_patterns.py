# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/template_saver_patterns.py: the read-only checks on workaround classes.

Each check runs on a parsed class; what the rule then does with the answer
is in test_template_savers.py.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from parallel_keras.migrate.rules import template_saver_patterns as patterns


def _class(source: str) -> cst.ClassDef:
    return cst.parse_statement(textwrap.dedent(source))


def _methods(classdef: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {
        statement.name.value: statement
        for statement in classdef.body.body
        if isinstance(statement, cst.FunctionDef)
    }


def _method(source: str) -> cst.FunctionDef:
    return cst.parse_statement(textwrap.dedent(source))


@pytest.mark.parametrize(
    "source, name, attribute",
    [
        (
            "def set_model(self, model):\n    super().set_model(self.single_model)\n",
            "set_model",
            "single_model",
        ),
        ("def set_model(self, model):\n    self.model = self.template\n", "set_model", "template"),
        (
            "def on_epoch_end(self, epoch, logs=None):\n    self.model = self.alternate\n",
            "on_epoch_end",
            "alternate",
        ),
        # set_model doing nothing: self.model stays what __init__ put there.
        ("def set_model(self, model):\n    pass\n", "set_model", "model"),
        ("def set_model(self, model):\n    '''Keep it.'''\n", "set_model", "model"),
        # A swap in another method is not a checkpoint's swap.
        ("def train(self):\n    self.model = self.template\n", "train", None),
        ("def set_model(self, model):\n    super().set_model(model)\n", "set_model", None),
    ],
)
def test_template_attribute(source, name, attribute):
    assert patterns.template_attribute(_method(source), name) == attribute


@pytest.mark.parametrize(
    "init, attribute, parameter",
    [
        ("def __init__(self, model, path):\n    self.single = model\n", "single", "model"),
        ("def __init__(self, path):\n    self.single = build()\n", "single", None),
        ("def __init__(self, model, path):\n    self.other = model\n", "single", None),
    ],
)
def test_assigned_parameter(init, attribute, parameter):
    assert patterns.assigned_parameter(_method(init), attribute) == parameter
    assert patterns.assigned_parameter(None, attribute) is None


@pytest.mark.parametrize(
    "call, found",
    [
        ("super().__init__(path)", True),
        ("super(Saver, self).__init__(path)", True),
        ("ModelCheckpoint.__init__(self, path)", True),
        ("Other.__init__(self, path)", False),
    ],
)
def test_super_init_call(call, found):
    init = _method(f"def __init__(self, path):\n    {call}\n")
    base = cst.parse_expression("ModelCheckpoint")
    got = patterns.super_init_call(init, base)
    assert (got is not None) is found
    if found:
        assert cst.Module([]).code_for_node(got) == call


@pytest.mark.parametrize(
    "body, only",
    [
        ("self.model = self.template\nsuper().on_epoch_end(epoch, logs)\n", True),
        (
            "before = self.model\ntry:\n    self.model = self.t\n    super().on_epoch_end(e, l)\n"
            "finally:\n    self.model = before\n",
            True,
        ),
        ("'''Swap.'''\npass\n", True),
        ("print('saving')\nself.model = self.t\n", False),
        ("if ready:\n    self.model = self.t\n", False),
        ("try:\n    self.model = self.t\nexcept Exception:\n    pass\n", False),
        ("self.count = 1\n", False),
    ],
)
def test_only_swaps(body, only):
    statements = cst.parse_module(body).body
    assert patterns.only_swaps(statements) is only


_SEED = """\
class ParallelModelCheckpoint(ModelCheckpoint):
    def __init__(self, model, filepath, monitor='val_loss', verbose=0,
                 save_best_only=False, save_weights_only=False, mode='auto', period=1):
        self.single_model = model
        super(ParallelModelCheckpoint, self).__init__(filepath, monitor, verbose,
            save_best_only, save_weights_only, mode, period)

    def set_model(self, model):
        super(ParallelModelCheckpoint, self).set_model(self.single_model)
"""


@pytest.mark.parametrize(
    "source, exact",
    [
        (_SEED, True),
        # Fewer of the legacy parameters, in order: still the same class.
        (
            _SEED.replace(
                ", verbose=0,\n                 save_best_only=False, save_weights_only=False, "
                "mode='auto', period=1",
                ", verbose=0",
            ).replace(
                "verbose,\n            save_best_only, save_weights_only, mode, period)",
                "verbose)",
            ),
            True,
        ),
        # Double quotes are the same default.
        (_SEED.replace("'val_loss'", '"val_loss"'), True),
        (_SEED.replace("period=1", "period=5"), False),
        (_SEED.replace("monitor, verbose", "verbose, monitor"), False),
        (_SEED.replace("def __init__(self, model,", "def __init__(self, template,"), False),
        (_SEED + "\n    def on_train_end(self, logs=None):\n        print('done')\n", False),
        (
            _SEED.replace(
                "        self.single_model = model\n",
                "        self.single_model = model\n        self.best = None\n",
            ),
            False,
        ),
    ],
)
def test_is_exact_seed_class(source, exact):
    classdef = _class(source)
    methods = _methods(classdef)
    init = methods["__init__"]
    swap_methods = {"set_model": methods["set_model"]}
    parameter = patterns.assigned_parameter(init, "single_model")
    if parameter is None:
        # `self.single_model = template`: not the legacy signature.
        assert not exact
        parameter = "template"
    super_call = patterns.super_init_call(init, classdef.bases[0].value)
    assert (
        patterns.is_exact_seed_class(classdef, init, parameter, super_call, swap_methods) is exact
    )


@pytest.mark.parametrize(
    "statement, docstring",
    [("'''Doc.'''", True), ("pass", True), ("x = 1", False), ("print('x')", False)],
)
def test_is_docstring(statement, docstring):
    assert patterns.is_docstring(cst.parse_statement(statement + "\n")) is docstring


@pytest.mark.parametrize(
    "body, call",
    [
        (
            "pmodel = multi_gpu_model(ser_model, gpus)\nself.__dict__.update(pmodel.__dict__)\n",
            "multi_gpu_model(ser_model, gpus)",
        ),
        (
            "self.__dict__.update(keras.utils.multi_gpu_model(m, 2).__dict__)\n",
            "keras.utils.multi_gpu_model(m, 2)",
        ),
        ("self.__dict__.update(make_parallel(m, 2).__dict__)\n", "make_parallel(m, 2)"),
        ("self.__dict__.update(copy(m).__dict__)\n", None),
    ],
)
def test_multi_gpu_call(body, call):
    init = _method("def __init__(self, m, gpus):\n" + textwrap.indent(body, "    "))
    found = patterns.multi_gpu_call(init, aliases=["make_parallel"])
    assert (cst.Module([]).code_for_node(found) if found is not None else None) == call


@pytest.mark.parametrize(
    "body, only",
    [
        ("p = multi_gpu_model(m, 2)\nself.__dict__.update(p.__dict__)\nself._smodel = m\n", True),
        ("'''Adopt.'''\nself.__dict__.update(p.__dict__)\n", True),
        ("self.__dict__.update(p.__dict__)\nprint('adopted')\n", False),
        ("if gpus > 1:\n    self.__dict__.update(p.__dict__)\n", False),
    ],
)
def test_only_adopts(body, only):
    assert patterns.only_adopts(cst.parse_module(body).body) is only
