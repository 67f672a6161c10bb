# SPDX-License-Identifier: Apache-2.0
"""`-o OUT` on a folder writes the whole tree; the summary counts copies."""

from __future__ import annotations

from parallel_keras.cli import migrate as migrate_cli


def _project(root):
    (root / "pkg" / "assets").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text("import keras\nopt = keras.optimizers.Adam(lr=0.1)\n")
    (root / "pkg" / "assets" / "vocab.json").write_text('{"a": 1}')
    (root / "pkg" / "assets" / "weights.hdf5").write_bytes(b"\x89HDF\r\n\x1a\n\x00\x01")
    (root / "pkg" / "config.yaml").write_text("epochs: 1\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\x00")


def test_output_folder_gets_package_data_and_the_report_lists_it(tmp_path, capsys):
    _project(tmp_path)
    out = tmp_path / "out"
    assert migrate_cli.main([str(tmp_path / "pkg"), "-o", str(out)]) == 0
    assert (out / "assets" / "vocab.json").read_text() == '{"a": 1}'
    assert (out / "assets" / "weights.hdf5").read_bytes() == (
        tmp_path / "pkg" / "assets" / "weights.hdf5"
    ).read_bytes()
    assert (out / "config.yaml").read_text() == "epochs: 1\n"
    assert "learning_rate=0.1" in (out / "model.py").read_text()
    assert not (out / "__pycache__").exists()
    text = capsys.readouterr().out
    # The summary line, before the closing advice (devices, quiet start).
    assert (
        "\n2 files: 1 rewritten, 0 through a compatibility path, 0 flagged, 0 errors, "
        "4 copied unchanged\n" in text
    )
    assert (
        "copied unchanged: __init__.py, assets/vocab.json, assets/weights.hdf5, config.yaml" in text
    )


def test_existing_data_file_in_output_refuses_before_any_write(tmp_path, capsys):
    _project(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.yaml").write_text("theirs")
    capsys.readouterr()
    assert migrate_cli.main([str(tmp_path / "pkg"), "-o", str(out)]) == 2
    assert sorted(path.name for path in out.iterdir()) == ["config.yaml"]
    assert (out / "config.yaml").read_text() == "theirs"
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("parallel-keras migrate: error: -o does not overwrite")
    assert "config.yaml already exists" in printed.err
