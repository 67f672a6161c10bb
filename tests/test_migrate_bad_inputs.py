"""`parallel-keras migrate` on bad inputs: a clear refusal, files untouched.

Each case runs the command in a folder holding a legacy script, then checks
the exit code, that the error states the rule, the value received and the
fix (naming the user's own path, never a temporary file), and that every
file in the folder is byte-identical to before.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import stat

import pytest

from parallel_keras.cli import migrate as migrate_cli

LEGACY = b"from keras.utils import multi_gpu_model\nparallel = multi_gpu_model(model, gpus=2)\n"


def _snapshot(root: pathlib.Path) -> dict[str, bytes | None]:
    """Every path under `root` -> its bytes (None for folders)."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def _regular_file_in_the_way(root):
    (root / "blocker").write_bytes(b"not a folder\n")


def _existing_output(root):
    (root / "train_k3.py").write_bytes(b"# my own file\n")


def _read_only_folder(root):
    (root / "locked").mkdir()
    (root / "locked" / "keep.txt").write_bytes(b"keep\n")
    os.chmod(root / "locked", stat.S_IRUSR | stat.S_IXUSR)


def _folder_without_python(root):
    (root / "notes").mkdir()
    (root / "notes" / "README.md").write_bytes(b"# no scripts here\n")


def _latin1_without_declaration(root):
    (root / "legacy_latin1.py").write_bytes(
        b"# Entra\xeenement sur 2 GPU\n" + LEGACY
    )


def _unknown_declared_encoding(root):
    (root / "odd.py").write_bytes(b"# -*- coding: klingon -*-\n" + LEGACY)


@dataclasses.dataclass(frozen=True)
class Case:
    setup: object
    argv: tuple[str, ...]
    exit_code: int
    rule: str
    received: str
    fix: str


CASES = {
    "output_is_the_input": Case(
        None, ("train.py", "-o", "train.py"), 1,
        "-o must name a new file, not the script being migrated",
        "Received: -o train.py", "Use --in-place"),
    "output_is_the_input_by_another_spelling": Case(
        None, ("train.py", "-o", "./train.py"), 1,
        "-o must name a new file", "Received: -o ./train.py", "Use --in-place"),
    "output_folder_is_the_input_folder": Case(
        None, (".", "-o", "."), 1,
        "-o must name a new file", "Received: -o .", "pass another -o path"),
    "output_under_a_regular_file": Case(
        _regular_file_in_the_way, ("train.py", "-o", "blocker/train.py"), 1,
        "a regular file is in the way", "Received: -o blocker/train.py",
        "Pass an -o path outside it"),
    "output_onto_an_existing_file": Case(
        _existing_output, ("train.py", "-o", "train_k3.py"), 1,
        "-o does not overwrite existing files", "Received: -o train_k3.py",
        "Delete it, or pass a new -o path"),
    "output_into_a_read_only_folder": Case(
        _read_only_folder, ("train.py", "-o", "locked/train.py"), 1,
        "-o must be in a folder you can write to", "Received: -o locked/train.py",
        "Pass an -o path in a writable folder"),
    "folder_without_python_files": Case(
        _folder_without_python, ("notes",), 1,
        "a folder given must contain some", "Received: 'notes'",
        "Pass the folder or the files"),
    "missing_path": Case(
        None, ("trian.py",), 1,
        "needs existing files or folders", "Received: 'trian.py'", "does not exist"),
    "non_utf8_without_declaration": Case(
        _latin1_without_declaration, ("legacy_latin1.py", "--in-place"), 1,
        "is not valid utf-8", "Received: byte 0xee at line 1, column 8",
        "# -*- coding: latin-1 -*-"),
    "unknown_declared_encoding": Case(
        _unknown_declared_encoding, ("odd.py", "--in-place"), 1,
        "declares an encoding Python does not know", "Received:",
        "Fix the `# -*- coding: ... -*-` line"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_clearly_and_changes_no_file(name, tmp_path, monkeypatch, capsys):
    case = CASES[name]
    (tmp_path / "train.py").write_bytes(LEGACY)
    if case.setup is not None:
        case.setup(tmp_path)
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    try:
        code = migrate_cli.main(list(case.argv))
    finally:
        for path in tmp_path.rglob("*"):
            if path.is_dir():
                os.chmod(path, 0o755)
    captured = capsys.readouterr()
    message = " ".join((captured.out + captured.err).split())
    assert code == case.exit_code, message
    for part in (case.rule, case.received, case.fix):
        assert part in message, f"{part!r} not in: {message}"
    assert ".tmp" not in message  # The user's paths, not ours.
    assert _snapshot(tmp_path) == before


def test_strict_exit_codes_are_documented_in_help(capsys):
    with pytest.raises(SystemExit) as raised:
        migrate_cli.main(["--help"])
    assert raised.value.code == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text
    for code in ("0", str(migrate_cli.EXIT_FAILED_FILE), "2", str(migrate_cli.EXIT_FLAGGED)):
        assert f"\n  {code}  " in text
    assert "--strict: something was flagged for a person" in text


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "utf-8-sig"])
def test_pep263_encoding_is_read_and_written_back(encoding, tmp_path, monkeypatch, capsys):
    declaration = "" if encoding == "utf-8-sig" else f"# -*- coding: {encoding} -*-\n"
    text = declaration + "# Entraînement sur 2 GPU, modèle « résumé »\n" + LEGACY.decode()
    (tmp_path / "train.py").write_bytes(text.encode(encoding))
    original = (tmp_path / "train.py").read_bytes()
    monkeypatch.chdir(tmp_path)
    assert migrate_cli.main(["train.py", "-o", "train_k3.py"]) == 0, capsys.readouterr()
    written = (tmp_path / "train_k3.py").read_bytes()
    assert written.decode(encoding) == text.replace(
        "from keras.utils import multi_gpu_model", "from parallel_keras import multi_gpu_model")
    assert (tmp_path / "train.py").read_bytes() == original
    assert migrate_cli.main(["train.py", "--in-place"]) == 0
    assert (tmp_path / "train.py.orig").read_bytes() == original
    assert (tmp_path / "train.py").read_bytes() == written
