# SPDX-License-Identifier: Apache-2.0
"""What a saved file is: a `.keras` archive, Keras 3 weights, or legacy HDF5.

Every loader starts here, so a path that does not exist, a file that is
neither HDF5 nor a Keras archive, and a truncated file all fail the same way,
with the rule, the path, and the fix, before any weight is touched.
"""

from __future__ import annotations

import enum
import io
import os
import zipfile

import h5py

# The HDF5 superblock signature (the file may start with a user block of
# 512, 1024, 2048... bytes; h5py.is_hdf5 knows where to look).
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class FileKind(enum.Enum):
    """The layouts parallel_keras reads."""

    KERAS_ARCHIVE = "keras archive"  # model.save("x.keras"): a zip.
    KERAS_WEIGHTS = "keras weights"  # save_weights("x.weights.h5"): layers/*/vars.
    LEGACY_HDF5 = "legacy hdf5"  # Keras 2 (or Keras 3 `.h5`): layer_names.


def describe(filepath: str | os.PathLike) -> FileKind:
    """Returns the kind of a saved Keras file, or raises a clear error.

    Args:
        filepath: Path of a `.keras`, `.weights.h5`, `.h5` or `.hdf5` file.

    Returns:
        The `FileKind`.

    Raises:
        ValueError: If the path does not exist, is a folder, is neither a
            Keras archive nor HDF5, is truncated, or is an HDF5 file that no
            Keras version wrote.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise ValueError(
            "A weights or model file must exist to be loaded. "
            f"Received: filepath={path!r}, which does not exist. Check the "
            "path (relative paths start from "
            f"{os.getcwd()!r})."
        )
    if os.path.isdir(path):
        raise ValueError(
            "Expected a weights or model file, not a folder. "
            f"Received: filepath={path!r}, a folder. Pass the `.keras`, "
            "`.weights.h5` or `.h5` file inside it."
        )
    if zipfile.is_zipfile(path):
        return _check_archive(path)
    if h5py.is_hdf5(path):
        return _check_hdf5(path)
    with open(path, "rb") as file:
        head = file.read(len(_HDF5_SIGNATURE))
    if head == _HDF5_SIGNATURE or head.startswith(b"PK\x03\x04"):
        raise ValueError(_truncated(path, "its header is cut short"))
    raise ValueError(
        "A Keras file must be an HDF5 file (`.h5`, `.weights.h5`) or a "
        f"`.keras` archive. Received: filepath={path!r} "
        f"({os.path.getsize(path)} bytes starting with {head[:8]!r}), which "
        "is neither. Pass a file written by `model.save` or "
        "`model.save_weights`."
    )


def open_weights(filepath: str | os.PathLike, kind: FileKind) -> h5py.File:
    """Opens the HDF5 weights of a file for reading (inside an archive too)."""
    path = os.fspath(filepath)
    if kind is FileKind.KERAS_ARCHIVE:
        with zipfile.ZipFile(path) as archive:
            member = _archive_weights_member(archive, path)
            data = archive.read(member)
        if not data.startswith(_HDF5_SIGNATURE):
            raise ValueError(
                "The weights inside a `.keras` archive are an HDF5 file. "
                f"Received: filepath={path!r}, whose {member!r} "
                f"({len(data)} bytes starting with {data[:8]!r}) is not HDF5. "
                "The archive was altered or written by another tool; save "
                "the model again with `model.save(...)`, or load an earlier "
                "checkpoint."
            )
        try:
            return h5py.File(io.BytesIO(data), "r")
        except OSError as error:
            raise ValueError(
                _truncated(path, f"member {member!r} cannot be read: {error}")
            ) from error
    return h5py.File(path, "r")


def _check_archive(path: str) -> FileKind:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "config.json" not in names:
                raise ValueError(
                    "A `.keras` archive holds `config.json` beside the "
                    f"weights. Received: filepath={path!r}, a zip file holding "
                    f"{sorted(names)[:5]}. Pass a file written by "
                    "`model.save('...keras')`."
                )
            bad = archive.testzip()
    except zipfile.BadZipFile as error:
        raise ValueError(_truncated(path, str(error))) from error
    if bad is not None:
        raise ValueError(_truncated(path, f"member {bad!r} is corrupt"))
    return FileKind.KERAS_ARCHIVE


def _archive_weights_member(archive: zipfile.ZipFile, path: str) -> str:
    for name in ("model.weights.h5",):
        if name in archive.namelist():
            return name
    raise ValueError(
        "This `.keras` archive holds no `model.weights.h5`. "
        f"Received: filepath={path!r} with {archive.namelist()}. Save it "
        "again with `model.save(...)` on Keras 3."
    )


def _check_hdf5(path: str) -> FileKind:
    try:
        with h5py.File(path, "r") as file:
            root = file["model_weights"] if "model_weights" in file else file
            if _has_attribute(root, "layer_names"):
                return FileKind.LEGACY_HDF5
            if "layers" in file or "vars" in file:
                return FileKind.KERAS_WEIGHTS
            groups = sorted(file.keys())[:5]
    except (OSError, KeyError, RuntimeError) as error:
        raise ValueError(_truncated(path, str(error))) from error
    raise ValueError(
        "This HDF5 file was not written by Keras: it has neither the Keras 3 "
        "`layers/` group nor the Keras 2 `layer_names` attribute. Received: "
        f"filepath={path!r} with top-level groups {groups}. Pass a file "
        "written by `model.save_weights` or `model.save`."
    )


def _has_attribute(group: h5py.Group, name: str) -> bool:
    # Keras 2 splits attributes above the 64 KB header limit into name0,
    # name1, ... (save_attributes_to_hdf5_group).
    return name in group.attrs or f"{name}0" in group.attrs


def _truncated(path: str, reason: str) -> str:
    return (
        "This file is truncated or corrupt and cannot be read. Received: "
        f"filepath={path!r} ({os.path.getsize(path)} bytes; {reason}). A "
        "save that was interrupted leaves such a file; load an earlier "
        "checkpoint, or save again (parallel_keras writes atomically, so its "
        "checkpoints are never left half-written)."
    )
