# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/template_savers.py: classes that exist only to save the template."""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import template_savers
from tests.migrate.helpers import changes, check_rewrite, check_rules, flags, run_rules

_IMPORTS = "from keras.callbacks import ModelCheckpoint\n"

_SEED_CLASS = """\
class {name}(ModelCheckpoint):
    def __init__(self, model, filepath, monitor='val_loss', verbose=0,
                 save_best_only=False, save_weights_only=False,
                 mode='auto', period=1):
        self.single_model = model
        super({name}, self).__init__(filepath, monitor, verbose, save_best_only, save_weights_only, mode, period)

    def set_model(self, model):
        super({name}, self).set_model(self.single_model)
"""


def _seed(name: str) -> str:
    return _IMPORTS + "\n\n" + _SEED_CLASS.format(name=name)


_ALT_CHECKPOINT = """\
class AltModelCheckpoint(ModelCheckpoint):
    def __init__(self, filepath, alternate_model, **kwargs):
        self.alternate_model = alternate_model
        super().__init__(filepath, **kwargs)

    def on_epoch_end(self, epoch, logs=None):
        model_before = self.model
        self.model = self.alternate_model
        super().on_epoch_end(epoch, logs)
        self.model = model_before

    def describe(self):
        return 'alt'
"""
_ALT_CHECKPOINT_AFTER = """\
class AltModelCheckpoint(parallel_keras.ParallelModelCheckpoint):
    def __init__(self, filepath, alternate_model, **kwargs):
        self.alternate_model = alternate_model
        super().__init__(alternate_model, filepath, **kwargs)

    def describe(self):
        return 'alt'
"""
_MODEL_MGPU = """\
class ModelMGPU(Model):
    def __init__(self, ser_model, gpus):
        pmodel = multi_gpu_model(ser_model, gpus)
        self.__dict__.update(pmodel.__dict__)
        self._smodel = ser_model

    def __getattribute__(self, attrname):
        if 'load' in attrname or 'save' in attrname:
            return getattr(self._smodel, attrname)
        return super(ModelMGPU, self).__getattribute__(attrname)
"""
_MGPU_IMPORTS = "from keras.models import Model\nfrom keras.utils import multi_gpu_model\n"
_PERIODIC = """\
class Periodic(ModelCheckpoint):
    def __init__(self, filepath, period=5):
        super().__init__(filepath, period=period)

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_since_last_save += 1
"""

REWRITES = {
    "the_legacy_tutorials_class_becomes_the_library_class": (
        _seed("ParallelModelCheckpoint"),
        _IMPORTS + "\n\nfrom parallel_keras import ParallelModelCheckpoint\n",
        "class ParallelModelCheckpoint -> `from parallel_keras import ParallelModelCheckpoint`: "
        "same signature, saves through the template, accepts period= on Keras 3",
    ),
    "renamed_it_keeps_its_name": (
        _seed("MultiGPUCheckpoint"),
        _IMPORTS + "\n\nfrom parallel_keras import ParallelModelCheckpoint as MultiGPUCheckpoint\n",
        "class MultiGPUCheckpoint -> `from parallel_keras import ParallelModelCheckpoint as "
        "MultiGPUCheckpoint`: same signature, saves through the template, accepts period= on "
        "Keras 3",
    ),
    "a_swapping_subclass_delegates_and_keeps_its_own_code": (
        _IMPORTS + "\n\n" + _ALT_CHECKPOINT,
        _IMPORTS + "import parallel_keras\n\n\n" + _ALT_CHECKPOINT_AFTER,
        "class AltModelCheckpoint now subclasses parallel_keras.ParallelModelCheckpoint, "
        "passing `alternate_model` as the template; removed on_epoch_end (they swapped in the "
        "template, which the library class does)",
    ),
    "model_mgpu_becomes_a_function": (
        _MGPU_IMPORTS + "\n\n" + _MODEL_MGPU,
        _MGPU_IMPORTS
        + "\n\ndef ModelMGPU(ser_model, gpus):\n    return multi_gpu_model(ser_model, gpus)\n",
        "class ModelMGPU -> function ModelMGPU returning the multi_gpu_model: Keras 3 models "
        "cannot adopt another model's __dict__, and parallel_keras's parallel model already "
        "saves and loads through the template",
    ),
    "keras2_period_passed_to_the_base": (
        _IMPORTS + "\n\n" + _PERIODIC,
        _IMPORTS
        + "import parallel_keras.callbacks\n\n\n"
        + _PERIODIC.replace(
            "class Periodic(ModelCheckpoint)",
            "class Periodic(parallel_keras.callbacks.ModelCheckpoint)",
        ).replace("period=period)\n", "period=period)\n        self.epochs_since_last_save = 0\n"),
        "class Periodic now subclasses parallel_keras.callbacks.ModelCheckpoint: it passes "
        "Keras 2's `period` to its base, which Keras 3's ModelCheckpoint reads as save_freq "
        "(batches); `self.epochs_since_last_save = 0` added (Keras 2's base set it)",
    ),
}


@pytest.mark.parametrize("before, after, message", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, message):
    result = check_rules(before, after, template_savers.TemplateSaverRule)
    assert [text for _, text in changes(result, template_savers.RULE)] == [message]
    assert not result.report.flags


_DOES_MORE_CHECKPOINT = """\
class Noisy(ModelCheckpoint):
    def __init__(self, template, path):
        self.template = template
        super().__init__(path)

    def set_model(self, model):
        print('swapping')
        super().set_model(self.template)
"""
_DOES_MORE_MGPU = _MODEL_MGPU + "\n    def summary_line(self):\n        return 'parallel'\n"


@pytest.mark.parametrize(
    "source, name, fix",
    [
        (
            _IMPORTS + "\n\n" + _DOES_MORE_CHECKPOINT,
            "Noisy",
            "replace Noisy with parallel_keras.ParallelModelCheckpoint(template, filepath, ...) "
            "(Keras 2 ModelCheckpoint arguments, period included), or subclass it and keep only "
            "your extra code.",
        ),
        (
            _MGPU_IMPORTS + "\n\n" + _DOES_MORE_MGPU,
            "ModelMGPU",
            "use parallel_keras.multi_gpu_model(template, gpus) directly: the model it returns "
            "saves and loads the template.",
        ),
    ],
)
def test_classes_doing_more_are_flagged_not_guessed(source, name, fix):
    result = run_rules(source, template_savers.TemplateSaverRule)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if text.startswith("class"))
    [(flag_line, message, action)] = flags(result, template_savers.RULE)
    assert (flag_line, action) == (line, fix)
    assert message.startswith(f"class {name} ") and "so it was not rewritten" in message
    assert not result.report.changes
    # The class is kept as it was, the fix written above it.
    lines = result.migrated.splitlines()
    notes = [text for text in lines if text.startswith("#")]
    assert [text for text in lines if not text.startswith("#")] == source.splitlines()
    assert notes[0].startswith("# parallel-keras migrate: ")
    assert " ".join(text[2:].strip() for text in notes).split(": ", 1)[1] == " ".join(fix.split())
    assert lines[lines.index(notes[-1]) + 1].startswith(f"class {name}(")
    again = run_rules(result.migrated, template_savers.TemplateSaverRule)
    assert again.migrated == result.migrated and len(again.report.flags) == 1


@pytest.mark.parametrize(
    "source",
    [
        # A subclass that neither swaps the model nor passes period.
        _IMPORTS + "class Plain(ModelCheckpoint):\n    def __init__(self, filepath):\n"
        "        super().__init__(filepath, save_best_only=True)\n",
        # A Model subclass that adopts nothing.
        "from keras.models import Model\nclass Net(Model):\n    def call(self, x):\n"
        "        return x\n",
        # Not Keras's ModelCheckpoint.
        "class Saver(object):\n    def set_model(self, model):\n        self.model = self.keep\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, template_savers.TemplateSaverRule)
    assert not result.report.changes and not result.report.flags


# --- Methods written on their `def` line ------------------------------------
# A method body on the `def` line (`def set_model(self, model): pass`) holds
# small statements, not statement lines; the checks read it as the one line
# it is, so the class is replaced as its two-line spelling is.

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


@pytest.mark.parametrize(
    "body",
    [
        # No __init__: callers pass period= to the base.
        "    def on_epoch_end(self, epoch, logs=None):\n        super().on_epoch_end(epoch, logs)\n",
        # **kwargs passed on.
        "    def __init__(self, filepath, **kwargs):\n"
        "        super().__init__(filepath, **kwargs)\n",
    ],
)
def test_any_checkpoint_subclass_that_may_get_period_gets_keras2s_base(body):
    source = _IMPORTS + "class Saver(ModelCheckpoint):\n" + body
    result = run_rules(source, template_savers.TemplateSaverRule)
    assert "class Saver(parallel_keras.callbacks.ModelCheckpoint):" in result.migrated
    [change] = [c for c in result.report.changes if c.rule == template_savers.RULE]
    assert change.modern is not None and "save_freq" in change.modern
    assert run_rules(result.migrated, template_savers.TemplateSaverRule).migrated == result.migrated
