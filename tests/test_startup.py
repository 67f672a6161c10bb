# SPDX-License-Identifier: Apache-2.0
"""Light to start: no TensorFlow or Keras until something needs them.

Each case runs in a fresh process and reports which of `tensorflow` and
`keras` ended up in `sys.modules`. The placement hooks, which need Keras,
are installed when the process imports Keras; a placed `.keras` file loads
with its placement in a process that imported parallel_keras first.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import pytest

import parallel_keras

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "migrate_corpus" / "legacy"
HEAVY = ("tensorflow", "keras")

# Runs the CLI in this process, then reports what was imported.
_RUN_CLI = """
import json, sys
from parallel_keras.cli import main
sys.argv = ["parallel-keras", *{argv!r}]
try:
    main.run()
except SystemExit as exit:
    code = exit.code
print("RESULT" + json.dumps({{
    "code": code,
    "heavy": sorted(m for m in {heavy!r} if m in sys.modules),
}}))
"""

# Importing TensorFlow or Keras raises, as on a machine without them.
_BLOCK_HEAVY = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {heavy!r}:
            raise ImportError(f"{{name}} is blocked in this test")
sys.meta_path.insert(0, _Block())
"""


def _python(code: str, cwd=None, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd or REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
    )


def _run_cli(argv, block_heavy=False, cwd=None) -> dict:
    code = (_BLOCK_HEAVY.format(heavy=HEAVY) if block_heavy else "") + _RUN_CLI.format(
        argv=list(argv), heavy=HEAVY
    )
    process = _python(code, cwd=cwd)
    lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, process.stdout + process.stderr
    return {
        **json.loads(lines[-1][len("RESULT") :]),
        "stdout": process.stdout,
        "stderr": process.stderr,
    }


def test_import_parallel_keras_imports_neither_tensorflow_nor_keras():
    process = _python(
        f"import sys, parallel_keras; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["demo", "--help"],
        ["convert", "--help"],
        ["launch", "--help"],
        ["migrate", "--help"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_help_and_version_import_neither_tensorflow_nor_keras(argv):
    result = _run_cli(argv)
    assert result["code"] == 0, result["stderr"]
    assert result["heavy"] == []


@pytest.mark.parametrize("subcommand", ["demo", "convert", "launch", "migrate"])
def test_each_help_shows_only_that_commands_flags(subcommand):
    result = _run_cli([subcommand, "--help"])
    assert result["stdout"].startswith(f"usage: parallel-keras {subcommand}")
    assert "--helpfull" not in result["stdout"]
    assert "--verbosity" not in result["stdout"]  # An absl flag.
    assert "-v, --verbose" in result["stdout"]


def test_version_prints_the_package_version():
    result = _run_cli(["--version"])
    assert f"parallel-keras {parallel_keras.__version__}" in result["stdout"]


def test_migrate_runs_where_tensorflow_and_keras_cannot_be_imported():
    result = _run_cli(["migrate", "--diff", str(CORPUS)], block_heavy=True)
    assert result["code"] == 0, result["stdout"] + result["stderr"]
    assert result["heavy"] == []
    assert "+++ " in result["stdout"]  # The diff was printed.


def test_launcher_process_imports_neither_tensorflow_nor_keras(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text("print('worker ran')\n")
    result = _run_cli(["launch", "--workers", "1", str(script)], cwd=tmp_path)
    assert result["code"] == 0, result["stdout"] + result["stderr"]
    assert "worker ran" in result["stdout"]
    assert result["heavy"] == []


def test_saved_placement_returns_on_plain_load_model_after_import(tmp_path):
    inputs = keras.Input((3,))
    with parallel_keras.device("/cpu:1"):
        outputs = keras.layers.Dense(2, name="placed")(inputs)
    path = tmp_path / "placed.keras"
    keras.Model(inputs, outputs).save(path)
    process = _python(f"""
        import sys
        import parallel_keras
        before = "keras.src.models" in sys.modules
        import keras  # Installs the hooks; no parallel_keras API is called.
        from parallel_keras._internals import interceptions
        after = interceptions.is_installed(
            "keras.src.models.functional.functional_from_config")
        model = keras.models.load_model({str(path)!r})
        from parallel_keras.device_placement import runtime
        print(before, after, [runtime.requested_device(node)
              for node in model.get_layer("placed")._inbound_nodes])
    """)
    assert process.returncode == 0, process.stderr
    assert process.stdout.split("\n")[-2] == "False True ['/cpu:1']"


def test_keras_imported_first_gets_the_hooks_on_import_parallel_keras():
    process = _python("""
        import keras
        import parallel_keras
        from parallel_keras._internals import interceptions
        print(interceptions.is_installed("keras.src.ops.node.Node.__init__"))
    """)
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip().endswith("True")


def test_hooks_that_no_longer_fit_keras_fail_loudly_at_first_use():
    process = _python("""
        import warnings
        import keras
        from keras.src.ops import function
        del function.Function._get_operation_for_node  # "An upgrade moved it."
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import parallel_keras
        print("WARNED", [str(w.message) for w in caught
                         if issubclass(w.category, RuntimeWarning)])
        try:
            parallel_keras.device("/cpu:0")
        except RuntimeError as error:
            print("RAISED", type(error).__name__, error)
    """)
    assert process.returncode == 0, process.stderr
    warned = next(line for line in process.stdout.splitlines() if line.startswith("WARNED"))
    assert "lose their saved placement" in warned
    raised = next(line for line in process.stdout.splitlines() if line.startswith("RAISED"))
    assert "PlacementInternalsChanged" in raised
    assert "_get_operation_for_node" in raised and "Received: keras==" in raised
