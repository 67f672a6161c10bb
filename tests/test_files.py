# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras._files`: atomic replace, permission bits, failures."""

import os
import stat

import pytest

from parallel_keras import _files


def test_temporary_sibling_keeps_a_listed_suffix_and_marks_the_rest(tmp_path):
    model = _files.temporary_sibling(
        tmp_path / "best.weights.h5", keep_suffixes=(".weights.h5", ".h5")
    )
    script = _files.temporary_sibling(tmp_path / "train.py")
    assert os.path.dirname(model) == os.path.dirname(script) == str(tmp_path)
    assert os.path.basename(model).startswith(".best.tmp-")
    assert model.endswith(".weights.h5")
    assert os.path.basename(script).startswith(".train.py.tmp-")
    assert script.endswith(".tmp")
    assert not os.path.exists(model) and not os.path.exists(script)


def test_write_text_replaces_keeping_permission_bits_and_line_endings(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("old\n")
    os.chmod(path, 0o751)
    _files.write_text(str(path), "new\r\nline\n")
    assert path.read_bytes() == b"new\r\nline\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert os.listdir(tmp_path) == ["train.py"]


def test_mode_from_gives_a_new_file_another_files_bits(tmp_path):
    source = tmp_path / "source.py"
    source.write_text("x\n")
    os.chmod(source, 0o700)
    _files.write_text(str(tmp_path / "out.py"), "y\n", mode_from=str(source))
    assert stat.S_IMODE(os.stat(tmp_path / "out.py").st_mode) == 0o700


def test_failed_write_removes_the_temporary_file_and_keeps_the_target(tmp_path):
    path = tmp_path / "m.keras"
    path.write_text("previous")

    def write(temporary):
        with open(temporary, "w") as file:
            file.write("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        _files.replace_with(str(path), write, keep_suffixes=(".keras",))
    assert path.read_text() == "previous"
    assert os.listdir(tmp_path) == ["m.keras"]


def test_read_only_target_is_refused_only_when_asked(tmp_path):
    path = tmp_path / "m.h5"
    path.write_text("previous")
    os.chmod(path, 0o444)
    with pytest.raises(PermissionError, match="read-only") as raised:
        _files.replace_with(str(path), lambda t: open(t, "w").close(), refuse_read_only=True)
    assert raised.value.filename == str(path)
    assert path.read_text() == "previous"
    _files.write_text(str(path), "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert os.listdir(tmp_path) == ["m.h5"]
