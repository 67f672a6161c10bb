# SPDX-License-Identifier: Apache-2.0
"""A project's own multi-GPU code is multi_gpu_model, whatever its name.

`towers.find_tower_builders` recognises it by what it does (one tower per
GPU under tf.device, slices in, concatenation out); `rules/tower_builders.py`
sends its callers to `parallel_keras.multi_gpu_model` with the right `gpus`;
`projects/own_parallel/` (a Mask R-CNN-style `ParallelModel` class and a
`make_parallel`-style function over a GPU id list, in other files than the
training script) runs as migrated on 4 simulated devices.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from parallel_keras import migrate
from parallel_keras.cli import migrate as migrate_cli
from parallel_keras.migrate import towers

PROJECT = pathlib.Path(__file__).parent / "projects" / "own_parallel"

_TOWER = """\
import tensorflow as tf
from keras.layers import Lambda, concatenate
from keras.models import Model

def {name}({params}):
    outputs = []
    for {target} in {iterable}:
        with tf.device({device}):
            part = Lambda(get_slice, arguments={{'idx': i, 'parts': n}})(model.input)
            outputs.append(model(part))
    with tf.device('/cpu:0'):
        merged = concatenate(outputs, axis=0)
    return Model(model.input, merged)
"""


@pytest.mark.parametrize(
    "device",
    [
        "'/gpu:%d' % i",
        "f'/gpu:{i}'",
        "'/gpu:{}'.format(i)",
        "'/gpu:' + str(i)",
        "'/device:GPU:%d' % i",
    ],
)
def test_device_spellings_are_recognised(device):
    source = _TOWER.format(
        name="make_parallel",
        params="model, gpu_count",
        target="i",
        iterable="range(gpu_count)",
        device=device,
    )
    builders = towers.find_tower_builders(ast.parse(source))
    assert builders == {
        "make_parallel": towers.TowerBuilder(
            "make_parallel", ("model", "gpu_count"), "model", "gpu_count"
        )
    }


@pytest.mark.parametrize(
    "params, target, iterable, gpus",
    [
        ("model, devices", "i, device", "enumerate(devices)", "devices"),
        ("model, devices", "device", "devices", "devices"),
        ("model, gpus", "i", "range(len(gpus))", "gpus"),
        ("template, n_gpus=2", "i", "range(0, n_gpus)", "n_gpus"),
    ],
)
def test_the_gpu_count_is_read_from_the_tower_loop(params, target, iterable, gpus):
    device = "device" if "device" in target else "'/gpu:%d' % i"
    source = _TOWER.format(
        name="parallelize", params=params, target=target, iterable=iterable, device=device
    )
    builder = towers.find_tower_builders(ast.parse(source))["parallelize"]
    assert builder.gpus == gpus
    assert builder.model == params.split(",")[0]


def test_code_that_only_places_layers_is_not_a_tower_builder():
    # tf.device in a loop, but no slices and no concatenation: placement.
    source = textwrap.dedent("""\
        import tensorflow as tf

        def build(x, gpus):
            for i in range(gpus):
                with tf.device('/gpu:%d' % i):
                    x = Dense(8)(x)
            return x
        """)
    assert towers.find_tower_builders(ast.parse(source)) == {}


def test_callers_in_the_same_file_get_parallel_keras_and_the_towers_stay():
    source = _TOWER.format(
        name="make_parallel",
        params="model, gpu_count",
        target="i",
        iterable="range(gpu_count)",
        device="'/gpu:%d' % i",
    )
    source += "GPUS = 4\nparallel = make_parallel(model, 2)\nother = make_parallel(gpu_count=GPUS, model=m)\n"
    result = migrate.migrate_source(source)
    assert "parallel = parallel_keras.multi_gpu_model(model, gpus=2)\n" in result.migrated
    assert "other = parallel_keras.multi_gpu_model(m, gpus=GPUS)\n" in result.migrated
    assert "        with tf.device('/gpu:%d' % i):\n" in result.migrated
    assert "parallel_keras.device" not in result.migrated
    assert migrate.migrate_source(result.migrated).migrated == result.migrated


def test_a_call_with_an_argument_multi_gpu_model_lacks_is_flagged():
    source = _TOWER.format(
        name="make_parallel",
        params="model, gpu_count, ps_device='/cpu:0'",
        target="i",
        iterable="range(gpu_count)",
        device="'/gpu:%d' % i",
    )
    source += "parallel = make_parallel(model, 2, '/gpu:0')\n"
    result = migrate.migrate_source(source)
    assert "parallel = make_parallel(model, 2, '/gpu:0')" in result.migrated
    (flag,) = result.report.flags
    assert "ps_device" in flag.message
    assert "parallel_keras.multi_gpu_model(model, gpus=...)" in flag.action


def _migrated(tmp_path) -> pathlib.Path:
    out = tmp_path / "out"
    assert migrate_cli.main([str(PROJECT), "-o", str(out)]) == 0
    return out


def test_callers_in_other_files_get_parallel_keras_and_lose_the_import(tmp_path):
    out = _migrated(tmp_path)
    train = (out / "train.py").read_text()
    assert "parallel = parallel_keras.multi_gpu_model(model, gpus=GPU_COUNT)" in train
    assert "parallel = parallel_keras.multi_gpu_model(model, gpus=[0, 1])" in train
    # Only the import the rewrite left unused goes; slice_batch is still used.
    assert "ParallelModel" not in train
    assert "from utils.towers import slice_batch\n" in train
    # The towers are not rewritten into placements.
    for name in ("parallel_model.py", "utils/towers.py"):
        assert (out / name).read_text() == (PROJECT / name).read_text()


_RUN = """
import runpy, sys
import parallel_keras
parallel_keras.simulate_devices(4)
sys.path.insert(0, ".")
runpy.run_path("train.py", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_migrated_project_trains_as_one_device_does(tmp_path):
    out = _migrated(tmp_path)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [sys.executable, "-c", _RUN], cwd=out, env=env, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr[-4000:]
    rng = np.random.RandomState(0)
    x = rng.rand(32, 4).astype("float32")
    y = rng.rand(32, 2).astype("float32")
    keras.utils.set_random_seed(1)
    reference = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    reference.compile(loss="mse", optimizer=keras.optimizers.SGD(0.1))
    reference.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    for saved in ("class.weights.h5", "function.weights.h5"):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.load_weights(out / saved)
        for got, want in zip(model.get_weights(), reference.get_weights()):
            np.testing.assert_allclose(got, want, atol=1e-5)


_KUZA55 = """\
import tensorflow as tf
from keras.layers import Lambda, concatenate
from keras.models import Model

def make_parallel(model, gpu_count, ps_device=None):
    if ps_device is None:
        ps_device = '/gpu:0'
    outputs = []
    for i in range(gpu_count):
        with tf.device('/gpu:%d' % i):
            part = Lambda(get_slice, arguments={'idx': i, 'parts': gpu_count})(model.input)
            outputs.append(model(part))
    with tf.device(ps_device):
        merged = concatenate(outputs, axis=0)
    return Model(model.input, merged)

parallel = make_parallel(serial_model, gpu_count, ps_device)
"""


def test_a_parameter_only_given_to_tf_device_is_dropped_not_flagged():
    (builder,) = towers.find_tower_builders(ast.parse(_KUZA55)).values()
    assert (builder.model, builder.gpus, builder.placement) == (
        "model",
        "gpu_count",
        ("ps_device",),
    )
    result = migrate.migrate_source(_KUZA55)
    assert "parallel = parallel_keras.multi_gpu_model(serial_model, gpus=gpu_count)\n" in (
        result.migrated
    )
    assert not result.report.flags
    (change,) = [c for c in result.report.changes if c.rule == "multi-GPU code"]
    assert "ps_device dropped" in change.message
    # Used for anything but a placement, the parameter keeps the call flagged.
    used = _KUZA55.replace("    outputs = []\n", "    outputs = [ps_device]\n")
    assert towers.find_tower_builders(ast.parse(used))["make_parallel"].placement == ()
    assert migrate.migrate_source(used).report.flags


# avolkov1/keras_experiments' layout: a Model subclass taking its model and
# GPU list from **kwargs, a make_parallel(...) that returns model_class(...),
# both re-exported by the package's `from ._multigpu import *`.
_KWARGS_CLASS = """\
import tensorflow as tf
from keras.layers import Concatenate, Lambda
from keras.models import Model


def slice_batch(x, ngpus, part):
    size = tf.shape(x)[0] // ngpus
    return x[part * size:(part + 1) * size]


class ModelMGPU(Model):
    def __init__(self, *args, **kwargs):
        smodel = kwargs.pop('serial_model')
        self._smodel = smodel
        gdev_list = kwargs.pop('gdev_list')
        self._ps_device = kwargs.pop('ps_device', '/cpu:0')
        super().__init__(**self._init_make_dataparallel(gdev_list, **kwargs))

    def _init_make_dataparallel(self, gdev_list, **kwargs):
        model = self._smodel
        towers = []
        for idev, dev in enumerate(gdev_list):
            with tf.device(self._ps_device):
                part = Lambda(slice_batch, arguments={'ngpus': len(gdev_list), 'part': idev})(
                    model.inputs[0])
            with tf.device(dev):
                towers.append(model(part))
        with tf.device(self._ps_device):
            merged = Concatenate(axis=0)(towers)
        kwargs['inputs'] = model.inputs
        kwargs['outputs'] = merged
        return kwargs


def make_parallel(serial_model, gdev_list, ps_device='/cpu:0', model_class=ModelMGPU):
    if len(gdev_list) < 2:
        return serial_model
    return model_class(serial_model=serial_model, gdev_list=gdev_list, ps_device=ps_device)
"""
_KWARGS_TRAIN = """\
import numpy as np
import keras
from multigpu import make_parallel

keras.utils.set_random_seed(1)
serial = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
model = make_parallel(serial, ['/gpu:0', '/gpu:1', '/gpu:2', '/gpu:3'])
model.compile(loss='mse', optimizer=keras.optimizers.SGD(0.1))
rng = np.random.RandomState(0)
x, y = rng.rand(32, 4).astype('float32'), rng.rand(32, 2).astype('float32')
model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
"""


def test_a_kwargs_model_subclass_and_its_wrapper_in_a_package_run_as_multi_gpu_model(
    tmp_path, monkeypatch
):
    project = tmp_path / "project"
    (project / "multigpu").mkdir(parents=True)
    (project / "multigpu" / "__init__.py").write_text("from ._multigpu import *\n")
    (project / "multigpu" / "_multigpu.py").write_text(_KWARGS_CLASS)
    (project / "train.py").write_text(_KWARGS_TRAIN)
    builders = towers.find_tower_builders(ast.parse(_KWARGS_CLASS))
    assert builders["ModelMGPU"].model == "serial_model"
    assert builders["ModelMGPU"].gpus == "gdev_list"
    assert builders["make_parallel"].placement == ("ps_device",)
    out = tmp_path / "out"
    assert migrate_cli.main([str(project), "-o", str(out)]) == 0
    train = (out / "train.py").read_text()
    assert (
        "model = parallel_keras.multi_gpu_model(\n    serial, gpus=['/gpu:0', '/gpu:1', "
        "'/gpu:2', '/gpu:3']\n)" in train
    )
    assert "make_parallel" not in train
    namespace = _run_in(out, monkeypatch)
    reference = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    reference.set_weights(_initial_dense(1))
    reference.compile(loss="mse", optimizer=keras.optimizers.SGD(0.1))
    reference.fit(namespace["x"], namespace["y"], epochs=2, batch_size=8, shuffle=False, verbose=0)
    for got, want in zip(namespace["serial"].get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, atol=1e-5)


def _initial_dense(seed: int) -> list:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]).get_weights()


def _run_in(folder: pathlib.Path, monkeypatch) -> dict:
    import runpy

    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    return runpy.run_path(str(folder / "train.py"))


_FACTORY = """\
import tensorflow as tf
from keras.layers import Lambda, concatenate
from keras.models import Model


class DataParallelModel(Model):
    def __init__(self, inputs, outputs, basic_model, replicas, name=None):
        super().__init__(inputs=inputs, outputs=outputs, name=name)

    @classmethod
    def create(cls, basic_model, gpu_count=2):
        outputs_all = []
        for gpu_id in range(gpu_count):
            with tf.device("gpu:%d" % gpu_id):
                part = Lambda(get_slice, arguments={'idx': gpu_id, 'parts': gpu_count})(
                    basic_model.inputs[0])
                outputs_all.append(basic_model(part))
        with tf.device("gpu:0"):
            merged = concatenate(outputs_all, axis=0)
        return cls(basic_model.inputs, merged, basic_model, [])
"""


def test_a_class_factory_method_building_towers_is_multi_gpu_model(tmp_path):
    builders = towers.find_tower_builders(ast.parse(_FACTORY))
    factory = builders["DataParallelModel.create"]
    assert (factory.model, factory.gpus, factory.gpus_default) == ("basic_model", "gpu_count", "2")
    project = tmp_path / "project"
    project.mkdir()
    (project / "data_parallel_model.py").write_text(_FACTORY)
    (project / "train.py").write_text(
        "from data_parallel_model import DataParallelModel\n"
        "parallel = DataParallelModel.create(basic_model, gpu_count)\n"
        "default = DataParallelModel.create(basic_model)\n"
    )
    out = tmp_path / "out"
    assert migrate_cli.main([str(project), "-o", str(out)]) == 0
    train = (out / "train.py").read_text()
    assert "parallel = parallel_keras.multi_gpu_model(basic_model, gpus=gpu_count)\n" in train
    assert "default = parallel_keras.multi_gpu_model(basic_model, gpus=2)\n" in train
    assert "DataParallelModel" not in train  # Its module (Keras 2 internals) is not imported.
