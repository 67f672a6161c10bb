# SPDX-License-Identifier: Apache-2.0
"""Every error path of every `parallel-keras` command: one exit code and one prefix per kind.

`parallel-keras --help` documents 0 success, 1 the command ran and failed, 2
a usage error. Each row runs the real entry point (`cli.main.run(argv)`) in
this process, in a fresh folder, and checks the exit code, that the last
line of stderr is `parallel-keras <command>: error: <message>` (the usage
line argparse prints may come before it), that nothing else was printed
(stdout empty, unless the row's command ran and reports, as migrate does)
and that no file of the folder changed.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap

import pytest
from helpers import legacy_source

from parallel_keras.cli import demo, errors
from parallel_keras.cli import main as cli_main
from parallel_keras.testing import legacy_files

LEGACY_SCRIPT = (
    "from keras.utils import multi_gpu_model\nparallel = multi_gpu_model(model, gpus=2)\n"
)
TEMPLATES_PY = textwrap.dedent("""
    def build():
        from parallel_keras.testing import legacy_files
        return legacy_files.functional_template()

    def raising():
        raise RuntimeError("boom: input_shape was never set")

    def not_a_model():
        return 42
""")


def _prepare(folder: str) -> None:
    """The files the rows point at."""

    def write(name: str, text: str | bytes, mode: int | None = None) -> None:
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(text if isinstance(text, bytes) else text.encode())
        if mode is not None:
            os.chmod(path, mode)

    write("script.py", LEGACY_SCRIPT)
    write("existing.py", "print('mine')\n")
    write("broken.py", "def broken(:\n")
    write("kept.py", LEGACY_SCRIPT)
    write("kept.py.orig", "the first original\n")
    write("ro/script.py", LEGACY_SCRIPT)
    os.chmod(os.path.join(folder, "ro"), 0o555)
    write("no_scripts/readme.txt", "no python here\n")
    write("notdir", "a regular file\n")
    write("templates.py", TEMPLATES_PY)
    write("failing_import.py", "raise ImportError('a package the module needs')\n")
    write("failing_module_pk.py", "raise RuntimeError('configuration missing')\n")
    write("existing.keras", b"not really a model")
    write("readonly.keras", b"kept as it is", mode=0o444)
    os.makedirs(os.path.join(folder, "folder.keras"))
    write("not_hdf5.h5", b"plain text, not HDF5\n")
    write("train.py", "print('training')\n")
    legacy_files.write_parallel_model_file(
        os.path.join(folder, "sequential.h5"), legacy_source("sequential")
    )
    legacy_files.write_parallel_model_file(
        os.path.join(folder, "functional.h5"), legacy_source("functional")
    )


@dataclasses.dataclass(frozen=True)
class Case:
    """One error: the argv after `parallel-keras`, its exit code and message.

    `says`: fragments of the error line (the rule, `Received:` with the
    user's value, the fix). `reports`: the command ran and printed its
    report on stdout before failing. `env`: environment set for the call.
    """

    id: str
    argv: tuple[str, ...]
    code: int
    says: tuple[str, ...]
    reports: bool = False
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    skip_as_root: bool = False


USAGE, FAILED = errors.EXIT_USAGE, errors.EXIT_FAILED
TEMPLATE = "templates.py:build"
SLURM = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")

CASES = [
    # --- the top level ---
    Case("unknown_top_level_flag", ("--bogus",), USAGE, ("unrecognized arguments: --bogus",)),
    Case("unknown_command", ("nope",), USAGE, ("invalid choice: 'nope'",)),
    # --- demo ---
    Case("demo_unknown_flag", ("demo", "--bogus"), USAGE, ("unrecognized arguments: --bogus",)),
    Case("demo_zero_epochs", ("demo", "--epochs", "0"), USAGE, ("--epochs 0", "Pass e.g.")),
    Case("demo_samples_text", ("demo", "--samples", "many"), USAGE, ("'many'", "--samples 3")),
    Case("demo_one_gpu", ("demo", "--gpus", "1"), USAGE, ("at least 2 replicas", "--gpus 1")),
    Case(
        "demo_output_dir_under_a_file",
        ("demo", "--output-dir", "notdir/run"),
        USAGE,
        ("--output-dir must be a folder", "Received: --output-dir notdir/run", "Pass a folder"),
    ),
    Case(
        "demo_output_dir_that_cannot_be_created",
        ("demo", "--output-dir", "/proc/nope"),
        USAGE,
        ("can create and write", "Received: --output-dir /proc/nope", "Pass a folder you can"),
    ),
    # --- convert: usage ---
    Case(
        "convert_missing_template_flag",
        ("convert", "functional.h5", "-o", "out.keras"),
        USAGE,
        ("the following arguments are required: --template",),
    ),
    Case(
        "convert_missing_input",
        ("convert", "nope.h5", "--template", TEMPLATE, "-o", "out.keras"),
        USAGE,
        ("must exist to be loaded", "Received: filepath='nope.h5'", "Check the path"),
    ),
    Case(
        "convert_input_not_hdf5",
        ("convert", "not_hdf5.h5", "--template", TEMPLATE, "-o", "out.keras"),
        USAGE,
        ("must be an HDF5 file", "filepath='not_hdf5.h5'", "Pass a file written by"),
    ),
    Case(
        "convert_output_suffix",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "out.h5"),
        USAGE,
        ("must end in .weights.h5", "Received: -o out.h5", "-o out.keras"),
    ),
    Case(
        "convert_output_exists",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "existing.keras"),
        USAGE,
        ("does not replace an existing file", "-o existing.keras", "--overwrite"),
    ),
    Case(
        "convert_output_in_missing_folder",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "missing/out.keras"),
        USAGE,
        ("does not exist", "-o missing/out.keras", "mkdir -p"),
    ),
    Case(
        "convert_output_under_a_file",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "notdir/out.keras"),
        USAGE,
        ("is a regular file, not a folder", "-o notdir/out.keras", "move that file away"),
    ),
    Case(
        "convert_output_is_a_folder",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "folder.keras"),
        USAGE,
        ("convert writes a file", "Received: -o folder.keras", "Pass a file path"),
    ),
    Case(
        "convert_overwrite_of_a_read_only_file",
        ("convert", "functional.h5", "--template", TEMPLATE, "-o", "readonly.keras", "--overwrite"),
        USAGE,
        ("keeps read-only files", "-o readonly.keras", "chmod u+w readonly.keras"),
    ),
    Case(
        "convert_template_without_colon",
        ("convert", "functional.h5", "--template", "templates.build", "-o", "out.keras"),
        USAGE,
        ("--template takes module:function", "--template templates.build", "Example:"),
    ),
    Case(
        "convert_template_file_missing",
        ("convert", "functional.h5", "--template", "models.py:build", "-o", "out.keras"),
        USAGE,
        ("names a file that does not exist", "'models.py' not found", "Check the path"),
    ),
    Case(
        "convert_template_module_not_found",
        ("convert", "functional.h5", "--template", "no_such_models_pk:build", "-o", "out.keras"),
        USAGE,
        ("module Python cannot find", "No module named 'no_such_models_pk'", "file.py:function"),
    ),
    Case(
        "convert_template_file_fails_to_import",
        ("convert", "functional.h5", "--template", "failing_import.py:build", "-o", "out.keras"),
        USAGE,
        ("failed to import", "ImportError: a package the module needs", "Fix the file"),
    ),
    Case(
        "convert_template_module_fails_to_import",
        ("convert", "functional.h5", "--template", "failing_module_pk:build", "-o", "out.keras"),
        USAGE,
        ("failed to import", "RuntimeError: configuration missing", "Fix the module"),
    ),
    Case(
        "convert_template_names_no_function",
        ("convert", "functional.h5", "--template", "templates.py:biuld", "-o", "out.keras"),
        USAGE,
        ("--template names no function", "'biuld'", "['build', 'not_a_model', 'raising']"),
    ),
    Case(
        "convert_template_returns_no_model",
        ("convert", "functional.h5", "--template", "templates.py:not_a_model", "-o", "out.keras"),
        USAGE,
        ("returning a keras.Model", "Received: templates.py:not_a_model returned int", "return"),
    ),
    # --- convert: ran and failed ---
    Case(
        "convert_template_raises",
        ("convert", "functional.h5", "--template", "templates.py:raising", "-o", "out.keras"),
        FAILED,
        ("must build and return the template", "RuntimeError: boom", "fix it"),
    ),
    Case(
        "convert_template_does_not_match_the_file",
        ("convert", "sequential.h5", "--template", TEMPLATE, "-o", "out.keras"),
        FAILED,
        ("first mismatching layer",),
    ),
    # --- launch (usage only: a failing worker is below) ---
    Case("launch_no_script", ("launch", "--workers", "2"), USAGE, ("required: script",)),
    Case(
        "launch_missing_script",
        ("launch", "--workers", "2", "nope.py"),
        USAGE,
        ("must exist before any worker starts", "Received: 'nope.py'", "Check the path"),
    ),
    Case(
        "launch_unreadable_script",
        ("launch", "--workers", "2", "unreadable.py"),
        USAGE,
        ("must be readable", "Received: 'unreadable.py'", "chmod u+r unreadable.py"),
        skip_as_root=True,
    ),
    Case(
        "launch_workers_and_hosts",
        ("launch", "--workers", "2", "--hosts", "a:1", "train.py"),
        USAGE,
        ("not allowed with argument --workers",),
    ),
    Case(
        "launch_zero_workers",
        ("launch", "--workers", "0", "train.py"),
        USAGE,
        ("workers must be an integer >= 1", "Received: workers=0", "--workers 2"),
    ),
    Case(
        "launch_index_with_workers",
        ("launch", "--workers", "2", "--index", "1", "train.py"),
        USAGE,
        ("index is only meaningful with hosts", "Received: workers=2, index=1", "Drop --index"),
    ),
    Case(
        "launch_hosts_without_index",
        ("launch", "--hosts", "127.0.0.1:1,127.0.0.1:2", "train.py"),
        USAGE,
        ("index must say which", "Received: index=None for 2 hosts", "--index between 0 and 1"),
    ),
    Case(
        "launch_host_without_port",
        ("launch", "--hosts", "127.0.0.1:1,nohost", "--index", "0", "train.py"),
        USAGE,
        ("host:port", "'nohost'", "--hosts 10.0.0.1:2222"),
    ),
    Case(
        "launch_min_workers_above_workers",
        ("launch", "--workers", "3", "--min-workers", "4", "train.py"),
        USAGE,
        ("between 1 and --workers", "Received: --min-workers 4", "at most 3"),
    ),
    Case(
        "launch_negative_max_restarts",
        ("launch", "--workers", "2", "--max-restarts=-1", "train.py"),
        USAGE,
        ("max_restarts must be an integer >= 0", "max_restarts=-1", "--max-restarts 3"),
    ),
    Case(
        "launch_zero_devices_per_worker",
        ("launch", "--workers", "2", "--devices-per-worker", "0", "train.py"),
        USAGE,
        ("must be a positive integer", "--devices-per-worker 0", "--devices-per-worker 2"),
    ),
    Case(
        "launch_log_dir_is_a_file",
        ("launch", "--workers", "2", "--log-dir", "notdir", "train.py"),
        USAGE,
        ("--log-dir names a folder", "Received: --log-dir notdir", "Pass a folder path"),
    ),
    Case(
        "launch_log_dir_that_cannot_be_created",
        ("launch", "--workers", "2", "--log-dir", "/proc/logs", "train.py"),
        USAGE,
        ("--log-dir must be a folder this process can write", "--log-dir /proc/logs", "Pass a"),
    ),
    Case(
        "launch_slurm_outside_slurm",
        ("launch", "--slurm", "train.py"),
        USAGE,
        ("--slurm reads the cluster from the environment", "Received: no SLURM_", "`srun`"),
    ),
    # --- migrate: usage ---
    Case("migrate_no_path", ("migrate",), USAGE, ("the following arguments are required: PATH",)),
    Case(
        "migrate_diff_and_in_place",
        ("migrate", "--diff", "--in-place", "script.py"),
        USAGE,
        ("argument --in-place: not allowed with argument --diff",),
    ),
    Case(
        "migrate_missing_path",
        ("migrate", "nope.py"),
        USAGE,
        ("needs existing files or folders", "Received: 'nope.py'", "Check the path"),
    ),
    Case(
        "migrate_missing_path_among_good_ones",
        ("migrate", "--in-place", "script.py", "nope.py"),
        USAGE,
        ("needs existing files or folders", "Received: 'nope.py'", "Check the path"),
    ),
    Case(
        "migrate_folder_without_python_files",
        ("migrate", "no_scripts"),
        USAGE,
        ("a folder given must contain some", "Received: 'no_scripts'", "Pass the folder"),
    ),
    Case(
        "migrate_output_exists",
        ("migrate", "-o", "existing.py", "script.py"),
        USAGE,
        ("-o does not overwrite existing files", "Received: -o existing.py", "pass a new -o"),
    ),
    Case(
        "migrate_output_is_the_input",
        ("migrate", "script.py", "-o", "./script.py"),
        USAGE,
        ("-o must name a new file", "Received: -o ./script.py", "Use --in-place"),
    ),
    Case(
        "migrate_output_under_a_file",
        ("migrate", "script.py", "-o", "notdir/script.py"),
        USAGE,
        ("a regular file is in the way", "Received: -o notdir/script.py", "outside it"),
    ),
    Case(
        "migrate_output_in_a_read_only_folder",
        ("migrate", "script.py", "-o", "ro/new.py"),
        USAGE,
        ("-o must be in a folder you can write to", "Received: -o ro/new.py", "writable folder"),
    ),
    Case(
        "migrate_in_place_onto_an_existing_orig",
        ("migrate", "--in-place", "script.py", "kept.py"),
        USAGE,
        ("never replaces one", "Received: kept.py.orig already exists", "Move it away"),
    ),
    Case(
        "migrate_in_place_in_a_read_only_folder",
        ("migrate", "--in-place", "script.py", "ro/script.py"),
        USAGE,
        ("in the script's folder", "Received: ro/script.py", "the folder is read-only", "chmod"),
    ),
    # --- migrate: ran and failed (the report is the output) ---
    Case(
        "migrate_file_that_does_not_parse",
        ("migrate", "script.py", "broken.py"),
        FAILED,
        ("1 of 2 file(s) could not be migrated", "broken.py", "The report above says why"),
        reports=True,
    ),
    Case(
        "migrate_in_place_keeps_a_file_that_does_not_parse",
        ("migrate", "--in-place", "broken.py"),
        FAILED,
        ("1 of 1 file(s) could not be migrated", "broken.py"),
        reports=True,
    ),
]


def _files(folder: str) -> dict[str, tuple[int, bytes | None]]:
    """Every path under `folder` -> (mode, bytes, None for a folder)."""
    state = {}
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(root, name)
            mode = os.stat(path).st_mode
            content = None
            if stat.S_ISREG(mode):
                with open(path, "rb") as file:
                    content = file.read()
            state[os.path.relpath(path, folder)] = (mode, content)
    return state


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cli_errors"))
    _prepare(folder)
    yield folder
    os.chmod(os.path.join(folder, "ro"), 0o755)


@pytest.fixture
def workspace(prepared, tmp_path, monkeypatch):
    """A copy of the prepared files as the working folder; restores the process."""
    folder = str(tmp_path / "ws")
    shutil.copytree(prepared, folder, symlinks=True)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    sigterm = signal.getsignal(signal.SIGTERM)
    yield folder
    signal.signal(signal.SIGTERM, sigterm)
    os.chmod(os.path.join(folder, "ro"), 0o755)


def _run(argv) -> int:
    """`parallel-keras ARGV` through the console entry point: its exit code."""
    with pytest.raises(SystemExit) as exited:
        cli_main.run(list(argv))
    return exited.value.code


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_error(case, workspace, monkeypatch, capsys):
    if case.skip_as_root and os.geteuid() == 0:
        pytest.skip("root reads any file: no unreadable file to test with")
    for name in SLURM:
        monkeypatch.delenv(name, raising=False)
    if case.id == "launch_unreadable_script":
        os.chmod("train.py", 0)
        os.rename("train.py", "unreadable.py")
    before = _files(workspace)
    capsys.readouterr()

    code = _run(case.argv)

    out, err = capsys.readouterr()
    assert code == case.code, (out, err)
    assert "Traceback" not in err, err
    command = case.argv[0] if case.argv and case.argv[0] in cli_main.SUBCOMMANDS else None
    line = _error_line(err)
    assert line.startswith(errors.prefix(command)), err
    for fragment in case.says:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    if case.reports:
        assert "ERROR, left untouched" in out, out
    else:
        assert out == "", out
    # Argparse's usage line may come first; nothing else does.
    others = [x for x in err.splitlines()[:-1] if x.strip() and not x.startswith(("usage:", " "))]
    assert not others, err
    assert _files(workspace) == before
    assert not [name for name in os.listdir(workspace) if ".tmp" in name]


def test_every_command_has_error_cases():
    covered = {case.argv[0] for case in CASES}
    assert set(cli_main.SUBCOMMANDS) <= covered


def test_migrate_strict_still_exits_3_and_prints_no_error_line(workspace, capsys):
    assert _run(["migrate", "--strict", "script.py"]) == 0
    assert "1 rewritten" in capsys.readouterr().out
    with open("flagged.py", "w") as file:
        file.write("import tensorflow as tf\nsess = tf.Session(server.target)\nsess.run(step)\n")
    capsys.readouterr()
    assert _run(["migrate", "--strict", "flagged.py"]) == 3
    out, err = capsys.readouterr()
    assert "flagged" in out and "error:" not in err
    assert _run(["migrate", "flagged.py"]) == 0


def test_python_m_migrate_uses_the_same_errors(workspace, capsys):
    from parallel_keras.cli import migrate as migrate_cli

    assert migrate_cli.main(["nope.py"]) == USAGE
    assert _error_line(capsys.readouterr().err).startswith("parallel-keras migrate: error: ")


@pytest.mark.parametrize(
    "physical_gpus, gpus, allowed", [(2, 3, False), (2, 2, True), (8, 4, True), (0, 8, True)]
)
def test_demo_refuses_more_gpus_than_exist_before_printing(physical_gpus, gpus, allowed):
    if allowed:
        assert demo.device_plan(physical_gpus, gpus)[1] == gpus
        return
    with pytest.raises(errors.UsageError, match=r"Received: --gpus 3, and this machine has 2"):
        demo.device_plan(physical_gpus, gpus)


def test_raised_as_keeps_the_message_and_sets_the_kind():
    with pytest.raises(errors.UsageError) as raised:
        with errors.raised_as(errors.UsageError, ValueError):
            raise ValueError("the rule. Received: x. The fix.")
    assert str(raised.value) == "the rule. Received: x. The fix."
    assert raised.value.exit_code == 2
    with pytest.raises(KeyError):
        with errors.raised_as(errors.UsageError, ValueError):
            raise KeyError("not converted")


@pytest.mark.subprocess
def test_a_failing_worker_is_an_error_line_with_its_own_exit_code(workspace, capsys):
    echo = os.path.join(os.path.dirname(__file__), "multi_worker_scripts", "echo.py")
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            "from parallel_keras.cli.main import run; run()",
            "launch",
            "--workers",
            "2",
            echo,
            "--fail-worker",
            "0",
            "--code",
            "7",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 7, process.stderr[-3000:]
    error_lines = [x for x in process.stderr.splitlines() if "error:" in x]
    assert len(error_lines) == 1, process.stderr[-3000:]
    assert error_lines[0].startswith("parallel-keras launch: error: worker 0 (pid ")
    assert "exited with code 7" in error_lines[0]


@pytest.mark.subprocess
def test_a_reader_that_leaves_early_is_no_traceback(workspace):
    reader, writer = os.pipe()
    os.close(reader)  # `| head` that has already exited.
    try:
        process = subprocess.run(
            [
                sys.executable,
                "-c",
                "from parallel_keras.cli.main import run; run()",
                "migrate",
                "--diff",
                "script.py",
            ],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(writer)
    assert process.returncode == errors.EXIT_FAILED
    assert process.stderr == ""
