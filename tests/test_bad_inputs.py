"""Every bad input the project handles, as one table (issue 12).

Each row is one bad input: the action, what it must end in (an exception
type, or a CLI exit code with no traceback), three message fragments (the
rule, the value received, the fix, each naming the user's own path or
flag), and what must be unchanged afterwards:

* "files": every file of the row's folder, byte for byte, with its mode;
* "model": also the shared model's weights and optimizer state.

The message must never name a hidden temporary file (`.tmp-`).

To add rows: append `Row(...)` to `ROWS` under a section for your area.
An action takes the `Workspace` (`ws`) of its row: `ws.path("name")` is an
absolute path in a fresh copy of the prepared files (see `_prepare`),
`ws.template`/`ws.parallel` a small compiled model on 2 replicas with Adam
state (shared by the rows of one process, so "model" rows prove they left it
alone), `ws.fresh_template()` an unwrapped one, `ws.cli(...)` runs
`parallel-keras ...` in the row's folder. In fragments, `{dir}` stands for
the row's folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

import parallel_keras
from parallel_keras.saving import matching as weights_lib
from parallel_keras.testing import legacy_files

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS_X = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
ROWS_Y = np.random.default_rng(1).normal(size=(8, 3)).astype("float32")

# The template functions `convert --template` rows point at. Importing the
# file needs no TensorFlow: only calling `build` does.
TEMPLATES_PY = textwrap.dedent('''
    def build():
        from parallel_keras.testing import legacy_files
        return legacy_files.functional_template()

    def raising():
        raise RuntimeError("boom: input_shape was never set")
''')


@dataclasses.dataclass(frozen=True)
class Row:
    """One bad input. `outcome`: an exception type, or a CLI exit code."""

    id: str
    action: Callable[["Workspace"], object]
    outcome: type[BaseException] | int
    rule: str
    received: str
    fix: str
    unchanged: str = "files"  # "files" or "model" (files, weights, optimizer).


@dataclasses.dataclass
class Workspace:
    dir: str
    template: keras.Model
    parallel: keras.Model

    def path(self, *names: str) -> str:
        return os.path.join(self.dir, *names)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (REPO, env.get("PYTHONPATH")) if p)
        return subprocess.run(
            [sys.executable, "-c", "from parallel_keras.cli.main import run; run()", *args],
            cwd=self.dir, capture_output=True, text=True, timeout=600, env=env,
            stdin=subprocess.DEVNULL)

    @staticmethod
    def fresh_template() -> keras.Model:
        return legacy_files.sequential_template()


# --- Prepared files, copied into each row's folder -------------------------


def _prepare(folder: str) -> None:
    def path(name):
        return os.path.join(folder, name)

    legacy_files.write_parallel_model_file(
        path("legacy.h5"), legacy_files.functional_template(), gpus=2)
    other = legacy_files.sequential_template()
    other.save(path("existing.keras"))
    other.save(path("other_arch.keras"))
    legacy_files.functional_template().save_weights(path("weights.weights.h5"))
    with open(path("legacy.h5"), "rb") as file:
        data = file.read()
    with open(path("truncated.h5"), "wb") as file:
        file.write(data[: len(data) // 3])
    with open(path("not_hdf5.h5"), "w") as file:
        file.write("epoch,loss\n1,0.5\n")
    with h5py.File(path("foreign.h5"), "w") as file:
        file["measurements"] = np.arange(4)
    with zipfile.ZipFile(path("existing.keras")) as source, zipfile.ZipFile(
        path("bad_member.keras"), "w") as target:
        for name in source.namelist():
            content = source.read(name)
            target.writestr(name, b"not an hdf5 file" if name.endswith(".h5") else content)
    with open(path("notdir"), "w") as file:
        file.write("a regular file\n")
    with open(path("templates.py"), "w") as file:
        file.write(TEMPLATES_PY)
    for name in ("readonly.weights.h5", "readonly.keras", "readonly.h5"):
        source = "weights.weights.h5" if name.endswith(".weights.h5") else "existing.keras"
        shutil.copy(path(source), path(name))
        os.chmod(path(name), 0o444)
    os.mkdir(path("folder.keras"))
    os.mkdir(path("ro_folder"))
    os.chmod(path("ro_folder"), 0o555)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("prepared"))
    _prepare(folder)
    return folder


@pytest.fixture(scope="module")
def models():
    template = legacy_files.functional_template()
    parallel = parallel_keras.multi_gpu_model(template, gpus=2)
    parallel.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    parallel.fit(ROWS_X, ROWS_Y, batch_size=4, epochs=1, verbose=0)  # Adam state.
    return template, parallel


# --- Actions used by several rows ------------------------------------------


@contextlib.contextmanager
def _no_terminal():
    real = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        yield
    finally:
        sys.stdin = real


def _enter_device(name):
    with parallel_keras.device(name):
        pass


def _fit_with(ws, callback):
    ws.parallel.fit(ROWS_X, ROWS_Y, batch_size=4, epochs=1, verbose=0, callbacks=[callback])


def _convert(ws, *args):
    return ws.cli("convert", *args)


def _subclassed():
    class Subclassed(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

    model = Subclassed()
    model(np.zeros((1, 3), "float32"))
    return model


def _save_no_terminal(save, path):
    with _no_terminal():
        save(path, overwrite=False)


# --- The table --------------------------------------------------------------

ROWS = [
    # --- convert (issue 12 list) ---
    Row("convert_onto_existing_output",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:build",
                            "-o", ws.path("existing.keras")),
        2, "does not replace an existing file", "-o {dir}/existing.keras", "--overwrite"),
    Row("convert_template_raises",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:raising",
                            "-o", "out.keras"),
        1, "must build and return the template",
        "RuntimeError: boom: input_shape was never set", "fix it"),
    Row("convert_output_in_missing_folder",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:build",
                            "-o", ws.path("missing", "out.keras")),
        2, "does not exist", "-o {dir}/missing/out.keras", "mkdir -p {dir}/missing"),
    Row("convert_output_under_a_file",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:build",
                            "-o", ws.path("notdir", "out.keras")),
        2, "is a regular file, not a folder", "-o {dir}/notdir/out.keras",
        "move that file away"),
    Row("convert_template_module_not_found",
        lambda ws: _convert(ws, "legacy.h5", "--template", "no_such_models:build",
                            "-o", "out.keras"),
        1, "module Python cannot find", "No module named 'no_such_models'",
        "pass path/to/file.py:function"),
    Row("convert_template_names_no_function",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:biuld",
                            "-o", "out.keras"),
        1, "--template names no function", "'biuld'", "['build', 'raising']"),
    # --- saving through a parallel model (issue 12 list) ---
    Row("save_weights_over_read_only_file",
        lambda ws: ws.parallel.save_weights(ws.path("readonly.weights.h5")),
        PermissionError, "keeps read-only files",
        "filepath='{dir}/readonly.weights.h5'", "chmod u+w {dir}/readonly.weights.h5",
        "model"),
    Row("save_over_read_only_file",
        lambda ws: ws.parallel.save(ws.path("readonly.keras")),
        PermissionError, "keeps read-only files", "filepath='{dir}/readonly.keras'",
        "chmod u+w", "model"),
    Row("save_into_missing_folder",
        lambda ws: ws.parallel.save(ws.path("missing", "m.keras")),
        ValueError, "writes into an existing folder",
        "filepath='{dir}/missing/m.keras'", "os.makedirs('{dir}/missing')", "model"),
    Row("save_under_a_file",
        lambda ws: ws.parallel.save_weights(ws.path("notdir", "w.weights.h5")),
        ValueError, "'{dir}/notdir' is a regular file",
        "filepath='{dir}/notdir/w.weights.h5'", "move that file away", "model"),
    Row("save_into_read_only_folder",
        lambda ws: ws.parallel.save(ws.path("ro_folder", "m.keras")),
        PermissionError, "needs a folder this process can write",
        "'{dir}/ro_folder' is read-only", "chmod u+w {dir}/ro_folder", "model"),
    Row("save_with_a_suffix_keras_cannot_write",
        lambda ws: ws.parallel.save(ws.path("model.txt")),
        ValueError, "picks the format from the suffix",
        "filepath='{dir}/model.txt'", "'{dir}/model.keras'", "model"),
    Row("save_overwrite_false_without_terminal",
        lambda ws: _save_no_terminal(ws.parallel.save, ws.path("existing.keras")),
        FileExistsError, "no terminal to ask on",
        "filepath='{dir}/existing.keras', which exists", "Pass overwrite=True", "model"),
    # --- loading (issue 12 list) ---
    Row("load_archive_whose_weights_are_not_hdf5",
        lambda ws: ws.parallel.load_weights(ws.path("bad_member.keras")),
        ValueError, "weights inside a `.keras` archive are an HDF5 file",
        "filepath='{dir}/bad_member.keras'", "save the model again", "model"),
    # --- devices (issue 12 list) ---
    Row("device_of_another_job_and_task",
        lambda ws: _enter_device("/job:ps/task:1/gpu:0"),
        ValueError, "names another process", "'/job:ps/task:1/gpu:0'",
        "Use '/gpu:0'"),
    Row("device_with_negative_index",
        lambda ws: _enter_device("/gpu:-1"),
        ValueError, "indices count from 0", "'/gpu:-1'", "'/gpu:0'"),
    Row("multi_gpu_model_gpus_as_string",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus="2"),
        TypeError, "must be an int >= 2", "gpus='2'", "Pass gpus=2"),
    Row("multi_gpu_model_cpu_merge_as_string",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus=2, cpu_merge="yes"),
        TypeError, "must be True or False", "cpu_merge='yes'", "Pass cpu_merge=True"),
    Row("multi_gpu_model_malformed_device_in_gpus",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus=[0, "nonsense"]),
        ValueError, "must be a device name", "'nonsense' is malformed",
        "Use GPU ids such as [0, 1]"),

    # --- Further cases (issue 12: at least 20 of our own) ---
    # simulate_devices
    Row("simulate_devices_after_tensorflow_started",
        lambda ws: parallel_keras.simulate_devices(2),
        RuntimeError, "must be called before TensorFlow initializes", "n=2",
        "restart the kernel"),
    Row("simulate_devices_zero",
        lambda ws: parallel_keras.simulate_devices(0),
        ValueError, "positive integer number of devices", "n=0", "Pass e.g. n=4"),
    Row("simulate_devices_tpu",
        lambda ws: parallel_keras.simulate_devices(2, "TPU"),
        ValueError, "can split a CPU or a GPU", "device_type='TPU'", "Use 'CPU' or 'GPU'"),
    # load_weights / load_legacy_weights
    Row("load_weights_missing_file",
        lambda ws: ws.parallel.load_weights(ws.path("nope.weights.h5")),
        ValueError, "must exist to be loaded", "filepath='{dir}/nope.weights.h5'",
        "Check the path", "model"),
    Row("load_weights_from_a_folder",
        lambda ws: parallel_keras.load_weights(ws.template, ws.path("ro_folder")),
        ValueError, "not a folder", "filepath='{dir}/ro_folder'", "Pass the `.keras`",
        "model"),
    Row("load_weights_truncated_h5",
        lambda ws: ws.parallel.load_weights(ws.path("truncated.h5")),
        ValueError, "truncated or corrupt", "filepath='{dir}/truncated.h5'",
        "load an earlier checkpoint", "model"),
    Row("load_weights_not_hdf5",
        lambda ws: ws.parallel.load_weights(ws.path("not_hdf5.h5")),
        ValueError, "must be an HDF5 file", "filepath='{dir}/not_hdf5.h5'",
        "Pass a file written by `model.save`", "model"),
    Row("load_weights_keras_archive_of_another_architecture",
        lambda ws: ws.parallel.load_weights(ws.path("other_arch.keras")),
        weights_lib.MismatchError, "does not match model",
        "filepath='{dir}/other_arch.keras'", "Build the model with the architecture",
        "model"),
    Row("load_weights_by_name_on_a_keras3_file",
        lambda ws: ws.parallel.load_weights(ws.path("weights.weights.h5"), by_name=True),
        ValueError, "by_name applies to legacy `.h5` files", "by_name=True",
        "Drop by_name", "model"),
    Row("load_legacy_weights_from_non_keras_hdf5",
        lambda ws: parallel_keras.load_legacy_weights(ws.template, ws.path("foreign.h5")),
        ValueError, "not written by Keras", "filepath='{dir}/foreign.h5'",
        "Pass a file written by `model.save_weights`", "model"),
    # saving
    Row("save_onto_a_folder",
        lambda ws: ws.parallel.save(ws.path("folder.keras")),
        ValueError, "writes a file", "filepath='{dir}/folder.keras'",
        "'{dir}/folder.keras/model.keras'", "model"),
    Row("save_weights_with_keras_suffix",
        lambda ws: ws.parallel.save_weights(ws.path("w.keras")),
        ValueError, "picks the format from the suffix", "filepath='{dir}/w.keras'",
        "'{dir}/w.weights.h5'", "model"),
    Row("save_weights_overwrite_false_without_terminal",
        lambda ws: _save_no_terminal(ws.parallel.save_weights, ws.path("weights.weights.h5")),
        FileExistsError, "no terminal to ask on", "filepath='{dir}/weights.weights.h5'",
        "Pass overwrite=True", "model"),
    Row("save_legacy_h5_weights_over_read_only_file",
        lambda ws: ws.parallel.save_weights(ws.path("readonly.h5")),
        PermissionError, "keeps read-only files", "filepath='{dir}/readonly.h5'",
        "chmod u+w", "model"),
    # convert
    Row("convert_missing_input",
        lambda ws: _convert(ws, "nope.h5", "--template", "templates.py:build", "-o", "out.keras"),
        1, "must exist to be loaded", "filepath='nope.h5'", "Check the path"),
    Row("convert_input_not_hdf5",
        lambda ws: _convert(ws, "not_hdf5.h5", "--template", "templates.py:build",
                            "-o", "out.keras"),
        1, "must be an HDF5 file", "filepath='not_hdf5.h5'", "Pass a file written by"),
    Row("convert_output_suffix_keras_cannot_write",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:build",
                            "-o", "out.h5"),
        2, "must end in .weights.h5 (weights) or .keras", "-o out.h5", "-o out.keras"),
    Row("convert_output_read_only_with_overwrite",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.py:build",
                            "-o", "readonly.keras", "--overwrite"),
        2, "keeps read-only files", "-o readonly.keras", "chmod u+w readonly.keras"),
    Row("convert_template_without_colon",
        lambda ws: _convert(ws, "legacy.h5", "--template", "templates.build", "-o", "out.keras"),
        1, "--template takes module:function", "--template templates.build",
        "Example: --template"),
    Row("convert_template_file_missing",
        lambda ws: _convert(ws, "legacy.h5", "--template", "models.py:build", "-o", "out.keras"),
        1, "names a file that does not exist", "'models.py' not found",
        "Check the path"),
    # checkpoints
    Row("checkpoint_under_a_file",
        lambda ws: _fit_with(ws, parallel_keras.ParallelModelCheckpoint(
            ws.template, ws.path("notdir", "ckpt-{epoch:02d}.keras"))),
        ValueError, "'{dir}/notdir' is a regular file",
        "filepath='{dir}/notdir/ckpt-{epoch:02d}.keras'", "move that file away", "model"),
    Row("checkpoint_period_zero",
        lambda ws: parallel_keras.ParallelModelCheckpoint(
            ws.template, ws.path("ckpt.keras"), period=0),
        ValueError, "an int >= 1", "period=0", "Pass period=1"),
    Row("checkpoint_suffix_does_not_fit_weights_only",
        lambda ws: parallel_keras.ParallelModelCheckpoint(
            ws.template, ws.path("ckpt.keras"), save_weights_only=True),
        ValueError, "must not end in .keras when save_weights_only=True",
        "filepath='{dir}/ckpt.keras'", "Use .weights.h5"),
    Row("checkpoint_monitor_names_no_metric",
        lambda ws: _fit_with(ws, parallel_keras.ParallelModelCheckpoint(
            ws.template, ws.path("best.keras"), monitor="accuracy", save_best_only=True)),
        ValueError, "logs no such metric", "monitor='accuracy'", "monitor='loss'"),
    Row("checkpoint_into_read_only_folder",
        lambda ws: _fit_with(ws, parallel_keras.ParallelModelCheckpoint(
            ws.template, ws.path("ro_folder", "ckpt.keras"))),
        ValueError, "folder this process can write", "'{dir}/ro_folder' is read-only",
        "chmod u+w {dir}/ro_folder", "model"),
    # devices and placement
    Row("device_as_int",
        lambda ws: _enter_device(1),
        TypeError, "must be a string", "1 of type int", "Pass '/gpu:1'"),
    Row("device_malformed",
        lambda ws: _enter_device("nonsense"),
        ValueError, "Malformed device string", "'nonsense'", "Use the form '/gpu:0'"),
    Row("device_that_does_not_exist",
        lambda ws: _enter_device("/gpu:99"),
        ValueError, "does not exist on this machine", "'/gpu:99'", "Use one of those"),
    Row("multi_gpu_model_device_of_another_task_in_gpus",
        lambda ws: parallel_keras.multi_gpu_model(
            ws.fresh_template(), gpus=["/job:worker/task:1/gpu:0", "/gpu:1"]),
        ValueError, "names another process", "'/job:worker/task:1/gpu:0'", "parallel-keras launch"),
    Row("multi_gpu_model_gpus_as_float",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus=2.0),
        TypeError, "must be an int >= 2", "gpus=2.0", "Pass gpus=2"),
    Row("multi_gpu_model_of_a_parallel_model",
        lambda ws: parallel_keras.multi_gpu_model(ws.parallel, gpus=2),
        TypeError, "takes the template model", "model=", "Pass its template", "model"),
    Row("multi_gpu_model_one_gpu",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus=1),
        ValueError, "gpus >= 2", "`gpus=1`", "use the template model directly"),
    Row("place_branches_with_no_devices",
        lambda ws: parallel_keras.place_branches(legacy_files.two_output_template(), []),
        ValueError, "at least one device", "devices=[]", "Pass e.g. devices="),
    Row("place_branches_with_one_string",
        lambda ws: parallel_keras.place_branches(legacy_files.two_output_template(), "/gpu:0"),
        TypeError, "needs a list of device strings", "devices='/gpu:0'",
        "Pass e.g. devices="),
    Row("placement_of_a_subclassed_model",
        lambda ws: parallel_keras.placement(_subclassed()),
        TypeError, "needs a functional Keras model", "model of type Subclassed",
        "functional"),
    # demo
    Row("demo_zero_epochs",
        lambda ws: ws.cli("demo", "--epochs", "0"),
        2, "must be at least 1", "--epochs 0", "Pass e.g. --epochs 3"),
    Row("demo_negative_batch_size",
        lambda ws: ws.cli("demo", "--batch-size", "-4"),
        2, "must be at least 1", "--batch-size -4", "Pass e.g. --batch-size"),
    Row("demo_output_dir_under_a_file",
        lambda ws: ws.cli("demo", "--output-dir", "notdir/run"),
        2, "must be a folder", "--output-dir notdir/run", "Pass a folder path"),
    # --- data parallelism (issue 12 list, and issue 10's bad inputs) ---
    Row("fit_on_zero_rows",
        lambda ws: ws.parallel.fit(ROWS_X[:0], ROWS_Y[:0], verbose=0),
        ValueError, "the arrays given have no rows", "fit(x) with shape [(0, 6)]",
        "Pass at least one row", "model"),
    Row("predict_on_zero_rows",
        lambda ws: ws.parallel.predict(ROWS_X[:0], verbose=0),
        ValueError, "the arrays given have no rows", "predict(x) with shape [(0, 6)]",
        "Pass at least one row", "model"),
    Row("fit_on_an_empty_dataset",
        lambda ws: ws.parallel.fit(
            tf.data.Dataset.from_tensor_slices((ROWS_X, ROWS_Y)).take(0).batch(4), verbose=0),
        ValueError, "needs at least one batch", "an empty dataset",
        "Pass data with at least one row", "model"),
    Row("fit_batch_size_zero",
        lambda ws: ws.parallel.fit(ROWS_X, ROWS_Y, batch_size=0, verbose=0),
        ValueError, "a positive integer", "fit(batch_size=0)", "Pass e.g. batch_size=32",
        "model"),
    Row("fit_shape_errors_quote_global_shapes",
        lambda ws: ws.parallel.fit(np.zeros((8, 5), "float32"), ROWS_Y, batch_size=8, verbose=0),
        ValueError, "the shape the template was built for", "fit(x) with shapes [(8, 5)]",
        "Reshape the data", "model"),
    Row("stock_model_checkpoint_folder_under_a_file",
        lambda ws: ws.parallel.fit(
            ROWS_X, ROWS_Y, epochs=1, verbose=0,
            callbacks=[keras.callbacks.ModelCheckpoint(ws.path("notdir", "c.keras"))]),
        ValueError, "Checkpoints need a folder this process can write", "is a regular file",
        "move that file away", "model"),
    Row("wrapped_template_load_weights_of_another_architecture",
        lambda ws: ws.template.load_weights(ws.path("other_arch.keras")),
        weights_lib.MismatchError, "does not match model",
        "filepath='{dir}/other_arch.keras'", "Build the model with the architecture",
        "model"),
    Row("compile_loss_dict_naming_no_output",
        lambda ws: ws.parallel.compile("sgd", loss={"no_such_output": "mse"}),
        ValueError, "must be keyed by output name", "['no_such_output'] name no output",
        "Key it by those names", "model"),
    Row("multi_gpu_model_unknown_batch_loss",
        lambda ws: parallel_keras.multi_gpu_model(ws.fresh_template(), gpus=2, batch_loss="whole"),
        ValueError, "over which rows the loss", "batch_loss='whole'", "Pass 'global'"),
]

# The rows issues 10 and 12 listed for these areas; the rest are our own.
ISSUE_LISTED = 28


def _files(folder):
    state = {}
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(root, name)
            mode = os.stat(path).st_mode
            content = None
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    content = file.read()
            state[os.path.relpath(path, folder)] = (mode, content)
    return state


def _model_state(parallel):
    # The parallel model shares the template's variables.
    variables = list(parallel.template.variables) + list(parallel.optimizer.variables)
    return [np.array(v.numpy(), copy=True) for v in variables]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input(row, prepared, models, tmp_path):
    folder = str(tmp_path / "ws")
    shutil.copytree(prepared, folder)
    template, parallel = models
    ws = Workspace(folder, template, parallel)
    files_before = _files(folder)
    model_before = _model_state(parallel) if row.unchanged == "model" else None

    if isinstance(row.outcome, int):
        done = row.action(ws)
        message = done.stderr
        assert done.returncode == row.outcome, (done.returncode, done.stdout, message)
        assert "Traceback" not in message, message
    else:
        with pytest.raises(row.outcome) as caught:
            row.action(ws)
        message = str(caught.value)

    for fragment in (row.rule, row.received, row.fix):
        expected = fragment.replace("{dir}", folder)
        assert expected in message, f"{expected!r} not in: {message}"
    assert ".tmp-" not in message
    assert _files(folder) == files_before
    if model_before is not None:
        after = _model_state(parallel)
        assert len(after) == len(model_before)
        for was, now in zip(model_before, after):
            np.testing.assert_array_equal(now, was)


def test_the_table_has_our_own_cases_beyond_the_issue():
    assert len({row.id for row in ROWS}) == len(ROWS)
    assert len(ROWS) - ISSUE_LISTED >= 20
