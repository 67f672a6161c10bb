# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/template_savers.py: classes written with one-line methods.

A method body on the `def` line (`def set_model(self, model): pass`) holds
small statements, not statement lines; the checks read it as the one line
it is, so the class is replaced as its two-line spelling is (it was flagged,
or silently kept, before).
"""

from __future__ import annotations

import pytest

from tests.migrate.helpers import check_rewrite

_SEED_INIT = """\
from keras.callbacks import ModelCheckpoint


class ParallelModelCheckpoint(ModelCheckpoint):
    def __init__(self, model, filepath, monitor='val_loss', verbose=0,
                 save_best_only=False, save_weights_only=False, mode='auto', period=1):
        self.single_model = model
        super(ParallelModelCheckpoint, self).__init__(
            filepath, monitor, verbose, save_best_only, save_weights_only, mode, period)

"""
_TEMPLATE_INIT = """\
import keras


class TemplateCheckpoint(keras.callbacks.ModelCheckpoint):
    def __init__(self, template, filepath, **kwargs):
        super().__init__(filepath, **kwargs)
        self.model = template

"""
_MGPU_HEAD = """\
import keras
from keras.utils import multi_gpu_model


class ModelMGPU(keras.Model):
"""
_MGPU_TAIL = """
    def __getattribute__(self, attrname):
        if 'load' in attrname or 'save' in attrname:
            return getattr(self._smodel, attrname)
        return super(ModelMGPU, self).__getattribute__(attrname)
"""

# (method on one line, the same method on two lines, what both become)
CASES = {
    "seed_set_model_swap": (
        _SEED_INIT
        + "    def set_model(self, model): "
        + "super(ParallelModelCheckpoint, self).set_model(self.single_model)\n",
        _SEED_INIT
        + "    def set_model(self, model):\n"
        + "        super(ParallelModelCheckpoint, self).set_model(self.single_model)\n",
        "from keras.callbacks import ModelCheckpoint\n\n\n"
        "from parallel_keras import ParallelModelCheckpoint\n",
    ),
    "set_model_does_nothing": (
        _TEMPLATE_INIT + "    def set_model(self, model): pass\n",
        _TEMPLATE_INIT + "    def set_model(self, model):\n        pass\n",
        "import keras\nimport parallel_keras\n\n\n"
        "class TemplateCheckpoint(parallel_keras.ParallelModelCheckpoint):\n"
        "    def __init__(self, template, filepath, **kwargs):\n"
        "        super().__init__(template, filepath, **kwargs)\n",
    ),
    "model_mgpu_init": (
        _MGPU_HEAD
        + "    def __init__(self, ser_model, gpus): pmodel = multi_gpu_model(ser_model, gpus); "
        + "self.__dict__.update(pmodel.__dict__)\n"
        + _MGPU_TAIL,
        _MGPU_HEAD
        + "    def __init__(self, ser_model, gpus):\n"
        + "        pmodel = multi_gpu_model(ser_model, gpus)\n"
        + "        self.__dict__.update(pmodel.__dict__)\n"
        + _MGPU_TAIL,
        "import keras\nfrom parallel_keras import multi_gpu_model\n\n\n"
        "def ModelMGPU(ser_model, gpus):\n"
        "    return multi_gpu_model(ser_model, gpus)\n",
    ),
}


@pytest.mark.parametrize("one_line, two_lines, after", CASES.values(), ids=CASES.keys())
def test_one_line_method_is_read_as_its_two_line_spelling(one_line, two_lines, after):
    assert not check_rewrite(two_lines, after).report.flags
    assert not check_rewrite(one_line, after).report.flags
