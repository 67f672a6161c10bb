# SPDX-License-Identifier: Apache-2.0
"""What a saved file is: a `.keras` archive, Keras 3 weights, or legacy HDF5.

Every loader starts here, so a path that does not exist, a file that is
neither HDF5 nor a Keras archive, and a truncated file all fail the same way,
with the rule, the path, and the fix, before any weight is touched.
"""

from __future__ import annotations

import enum
import errno
import io
import json
import os
import stat
import zipfile

import h5py

from parallel_keras._internals import legacy_h5_models

# The HDF5 superblock signature (the file may start with a user block of
# 512, 1024, 2048... bytes; h5py.is_hdf5 knows where to look).
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class FileKind(enum.Enum):
    """The layouts parallel_keras reads."""

    KERAS_ARCHIVE = "keras archive"  # model.save("x.keras"): a zip.
    KERAS_WEIGHTS = "keras weights"  # save_weights("x.weights.h5"): layers/*/vars.
    LEGACY_HDF5 = "legacy hdf5"  # Keras 2 (or Keras 3 `.h5`): layer_names.


def describe(filepath: str | os.PathLike, *, weights_bytes: int | None = None) -> FileKind:
    """Returns the kind of a saved Keras file, or raises a clear error.

    Args:
        filepath: Path of a `.keras`, `.weights.h5`, `.h5` or `.hdf5` file.
        weights_bytes: The bytes of the weights the file is loaded into;
            an archive whose weights declare far more is refused before any
            byte is decompressed. Defaults to None (no such bound).

    Returns:
        The `FileKind`.

    Raises:
        ValueError: If the path does not exist, is a folder or another file
            that is not a regular file (a named pipe), is neither a Keras
            archive nor HDF5, is truncated, is an HDF5 file that no Keras
            version wrote or whose data lives in other files (external
            storage, virtual datasets, external links), or declares more
            data than the model needs.
    """
    path = os.fspath(filepath)
    mode = status(path, "filepath").st_mode
    if stat.S_ISDIR(mode):
        raise ValueError(
            "Expected a weights or model file, not a folder. "
            f"Received: filepath={path!r}, a folder. Pass the `.keras`, "
            "`.weights.h5` or `.h5` file inside it."
        )
    require_regular_file(path, "filepath", mode)
    if zipfile.is_zipfile(path):
        return _check_archive(path, weights_bytes)
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


def status(path: str, argument: str) -> os.stat_result:
    """`os.stat(path)`, or the rule, `argument=path` and the fix.

    Args:
        path: The file to load.
        argument: How the user named it (`filepath`, `backup_dir`).

    Returns:
        The stat result (links followed).

    Raises:
        ValueError: If the path does not exist or cannot be looked up (a
            path longer than the system allows, a folder without search
            permission).
    """
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise ValueError(
            "A weights or model file must exist to be loaded. "
            f"Received: {argument}={path!r}, which does not exist. Check the "
            "path (relative paths start from "
            f"{os.getcwd()!r})."
        ) from None
    except OSError as error:
        fix = (
            "Pass a shorter path: a relative one from a folder nearer the file, "
            "or a symbolic link to its folder."
            if error.errno == errno.ENAMETOOLONG
            else "Check the permissions of the path's folders (chmod u+rx)."
        )
        raise ValueError(
            "A weights or model file must be reachable to be loaded. "
            f"Received: {argument}={path!r} ({len(path)} characters), which "
            f"cannot be looked up: {error.strerror or error}. {fix}"
        ) from None


def require_regular_file(path: str, argument: str, mode: int | None = None) -> None:
    """Refuses a named pipe, device or socket before anything opens it.

    Opening a named pipe for reading waits for a writer, forever if none
    comes; a device may yield endless bytes.

    Raises:
        ValueError: If `path` (links followed) is not a regular file.
    """
    if mode is None:
        mode = status(path, argument).st_mode
    if stat.S_ISREG(mode):
        return
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    raise ValueError(
        "A weights, model or backup file must be a regular file: reading a "
        "pipe or a device would wait for a writer forever or never end. "
        f"Received: {argument}={path!r}, which is {kind}. Pass the saved file "
        "itself (copy the stream into a file first), or move that entry away."
    )


def open_weights(
    filepath: str | os.PathLike, kind: FileKind, *, weights_bytes: int | None = None
) -> h5py.File:
    """Opens the HDF5 weights of a file for reading (inside an archive too)."""
    path = os.fspath(filepath)
    if kind is FileKind.KERAS_ARCHIVE:
        with zipfile.ZipFile(path) as archive:
            member = _archive_weights_member(archive, path)
            _check_member_size(archive.getinfo(member), path, weights_bytes)
            try:
                data = archive.read(member)
            except MemoryError:
                raise ValueError(
                    f"A `.keras` archive's weights must fit in memory to be "
                    f"loaded. Received: filepath={path!r}, whose {member!r} "
                    f"declares {archive.getinfo(member).file_size} bytes. Load "
                    "it on a machine with more memory, or check where the "
                    "file came from."
                ) from None
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
            file = h5py.File(io.BytesIO(data), "r")
        except OSError as error:
            raise ValueError(
                _truncated(path, f"member {member!r} cannot be read: {error}")
            ) from error
        try:
            refuse_outside_data(file, path)
        except BaseException:
            file.close()
            raise
        return file
    return h5py.File(path, "r")


# What a `.keras` archive's weights may hold beyond the model's own weights:
# the optimizer's (Adam keeps two slots per weight), and HDF5's bookkeeping.
_ARCHIVE_WEIGHTS_FACTOR = 8
_ARCHIVE_WEIGHTS_SLACK = 64 * 2**20


def saved_optimizer_config(path: str) -> dict | None:
    """The optimizer config a whole-model file holds, or None.

    A `.keras` archive keeps it in `config.json` (`compile_config.optimizer`),
    a Keras HDF5 model file in its `training_config` attribute
    (`optimizer_config`). A file that is neither, holds no compiled model, or
    cannot be read gives None: the loader then reports what is wrong.
    """
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                config = json.loads(archive.read("config.json"))
            compiled = config.get("compile_config") or {}
            optimizer = compiled.get("optimizer")
        else:
            with h5py.File(path, "r") as file:
                # The one reader of this attribute, also legacy_models's.
                training = legacy_h5_models.training_config(file)
            if training is None:
                return None
            optimizer = training.get("optimizer_config")
    except (OSError, KeyError, ValueError, AttributeError):
        return None
    return optimizer if isinstance(optimizer, dict) else None


def _check_member_size(info: zipfile.ZipInfo, path: str, weights_bytes: int | None) -> None:
    """Refuses a member declaring far more bytes than the model's weights,
    before a byte of it is decompressed (a decompression bomb)."""
    if weights_bytes is None:
        return
    bound = _ARCHIVE_WEIGHTS_FACTOR * weights_bytes + _ARCHIVE_WEIGHTS_SLACK
    if info.file_size <= bound:
        return
    raise ValueError(
        "A `.keras` archive's weights are at most a few times the model's own "
        f"({weights_bytes} bytes here, with the optimizer's and HDF5's "
        "overhead), and are checked before being decompressed. Received: "
        f"filepath={path!r}, whose {info.filename!r} declares "
        f"{info.file_size} bytes ({info.compress_size} compressed). Load the "
        "archive into the model it was saved from, or check where the file "
        "came from."
    )


def refuse_outside_data(file: h5py.File, path: str) -> None:
    """Refuses an HDF5 file whose data lives in other files.

    HDF5 lets a dataset keep its bytes in other files (external storage,
    virtual datasets) and a group link into another file (external links).
    A weights file read that way loads whatever those files hold; Keras's
    own loader refuses them too ("H5 file with external Dataset").

    Raises:
        ValueError: Naming the file, the dataset or link, and the fix.
    """

    def walk(group: h5py.Group, prefix: str) -> None:
        for name in group:
            where = f"{prefix}{name}"
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                raise ValueError(
                    _outside(path, where, f"an external link to {link.filename}:{link.path}")
                )
            if isinstance(link, h5py.SoftLink):
                continue  # Within this file; its target is walked itself.
            item = group.get(name)
            if isinstance(item, h5py.Group):
                walk(item, where + "/")
            elif isinstance(item, h5py.Dataset):
                if item.external:
                    stored = sorted({_text(entry[0]) for entry in item.external})
                    raise ValueError(_outside(path, where, f"HDF5 external storage in {stored}"))
                if item.is_virtual:
                    raise ValueError(_outside(path, where, "a virtual dataset"))
                _check_declared_size(item, path, where)

    walk(file, "/")


# Compression HDF5 allows beyond which a dataset is taken for a bomb.
_MAX_COMPRESSION = 1000
_LARGE_DATASET = 2**30


def _check_declared_size(dataset: h5py.Dataset, path: str, where: str) -> None:
    """Refuses a dataset declaring more bytes than the file holds for it.

    Reading allocates the declared shape first: (10**11,) over 16 bytes of
    data would end in NumPy's "array is too big" or a MemoryError.
    """
    declared = dataset.size * dataset.dtype.itemsize
    stored = dataset.id.get_storage_size()
    compressed = bool(dataset.compression or dataset.id.get_create_plist().get_nfilters())
    if declared <= stored or (
        compressed and (declared <= _LARGE_DATASET or declared <= _MAX_COMPRESSION * stored)
    ):
        return
    raise ValueError(
        "A weights file holds the data its datasets declare. Received: "
        f"filepath={path!r}, whose {where!r} declares shape {dataset.shape} "
        f"of {dataset.dtype} ({declared} bytes) over {stored} stored bytes; it "
        "was not read. The file was crafted or damaged: load an earlier copy, "
        "or save the weights again with model.save_weights."
    )


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _outside(path: str, where: str, what: str) -> str:
    return (
        "A weights file is read from itself only: HDF5 external storage, "
        "virtual datasets and external links point into other files (Keras "
        "refuses them too). Received: "
        f"filepath={path!r}, whose {where!r} is {what}. Save the weights again "
        "with model.save_weights (or copy the data into the file with "
        "h5repack), and load that file."
    )


def _check_archive(path: str, weights_bytes: int | None = None) -> FileKind:
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
            for info in archive.infolist():
                if info.filename.endswith(".h5"):
                    _check_member_size(info, path, weights_bytes)
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
            refuse_outside_data(file, path)
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
