# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/template_access.py: the template reached through the parallel model."""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import template_access
from tests.migrate.helpers import changes, check_rules, flags, run_rules

_PARALLEL = (
    "from keras.utils import multi_gpu_model\nparallel_model = multi_gpu_model(model, gpus=2)\n"
)
_LAYERS = (
    "`parallel_model.layers[{index}]` -> `parallel_model.template`: Keras 2 kept the "
    "template at layers[-(outputs + 1)]; parallel_keras exposes it directly"
)
_SET_MODEL = (
    "`model.layers[-2]` in set_model -> `model.template` when fit trains a parallel "
    "model: Keras 2's multi_gpu_model kept the template at that layer; parallel_keras's "
    "has it as `.template`"
)

REWRITES = {
    "layers_minus_two": (
        _PARALLEL + "parallel_model.layers[-2].save('t.h5')\n",
        _PARALLEL + "parallel_model.template.save('t.h5')\n",
        [(3, _LAYERS.format(index=-2))],
    ),
    "two_outputs": (
        _PARALLEL + "template = parallel_model.layers[-3]\n",
        _PARALLEL + "template = parallel_model.template\n",
        [(3, _LAYERS.format(index=-3))],
    ),
    "get_layer_by_the_template_name": (
        _PARALLEL + "parallel_model.get_layer('model_1').save_weights('w.h5')\n",
        _PARALLEL + "parallel_model.template.save_weights('w.h5')\n",
        [
            (
                3,
                "`parallel_model.get_layer('model_1')` -> `parallel_model.template`: the "
                "parallel model has no template layer in Keras 3",
            )
        ],
    ),
    "set_model_of_a_callback": (
        "class Saver(Callback):\n    def set_model(self, model):\n"
        "        self.template = model.layers[-2]\n",
        "class Saver(Callback):\n    def set_model(self, model):\n"
        # Longer than 79 characters: the value goes in parentheses on its own line.
        "        self.template = (\n"
        "            model.template if hasattr(model, 'template') else model.layers[-2]\n"
        "        )\n",
        [(3, _SET_MODEL)],
    ),
    "self_model_assigned_in_set_model": (
        "class Keep(Callback):\n    def set_model(self, model):\n"
        "        self.model = model.layers[-2]\n"
        "    def on_epoch_end(self, epoch, logs=None):\n        self.model.save('m.h5')\n",
        "class Keep(Callback):\n    def set_model(self, model):\n"
        "        self.template_model = (\n"
        "            model.template if hasattr(model, 'template') else model.layers[-2]\n"
        "        )\n"
        "    def on_epoch_end(self, epoch, logs=None):\n        self.template_model.save('m.h5')\n",
        [
            (
                1,
                "class Keep: `self.model` -> `self.template_model`: its set_model stores "
                "another model there, and Keras 3 callbacks do not let `self.model` be "
                "assigned",
            ),
            (3, _SET_MODEL),
        ],
    ),
}


@pytest.mark.parametrize("before, after, recorded", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, recorded):
    result = check_rules(before, after, template_access.TemplateAccessRule)
    assert sorted(changes(result, template_access.RULE)) == sorted(recorded)
    assert not result.report.flags


@pytest.mark.parametrize(
    "source, access, owner",
    [
        # A parallel-looking name never assigned here.
        ("gpu_model.layers[-2].save('x.h5')\n", "gpu_model.layers[-2]", "gpu_model"),
        # Assigned a parallel model once, and something else once.
        (
            _PARALLEL + "if cpu_only:\n    parallel_model = model\n"
            "parallel_model.get_layer('model_1').save('x.h5')\n",
            "parallel_model.get_layer('model_1')",
            "parallel_model",
        ),
    ],
)
def test_unknown_owner_is_flagged(source, access, owner):
    result = run_rules(source, template_access.TemplateAccessRule)
    line = next(number for number, text in enumerate(source.splitlines(), 1) if access in text)
    assert flags(result, template_access.RULE) == [
        (
            line,
            f"`{access}` reaches the template the Keras 2 way, but `{owner}` is not known to "
            "hold a multi_gpu_model result",
            f"if {owner} is a multi_gpu_model result, use `{owner}.template`; else keep a "
            "reference to the model you built.",
        )
    ]
    # The code is kept, with the note above its line; a second run adds nothing.
    kept = [text for text in result.migrated.splitlines() if not text.startswith("#")]
    assert kept == source.splitlines()
    assert not result.report.changes
    again = run_rules(result.migrated, template_access.TemplateAccessRule)
    assert again.migrated == result.migrated and len(again.report.flags) == 1


@pytest.mark.parametrize(
    "source",
    [
        _PARALLEL + "last = parallel_model.layers[-1]\n",  # The merge layer, not the template.
        "encoder = autoencoder.layers[-2]\n",  # Not a parallel model's name.
        _PARALLEL + "dense = parallel_model.get_layer('dense_1')\n",
        _PARALLEL + "t = parallel_model.template\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, template_access.TemplateAccessRule)
    assert not result.report.changes and not result.report.flags
