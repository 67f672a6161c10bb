# SPDX-License-Identifier: Apache-2.0
"""`parallel-keras convert`: a Keras 2 multi-GPU HDF5 file to a Keras 3 file.

    parallel-keras convert LEGACY.h5 --template module:function -o OUT [--skip-mismatch]

`function()` builds the template (the model that was passed to
`multi_gpu_model`); the legacy weights are loaded into it by layer name and
it is written to OUT: `.weights.h5` for weights, `.keras` for the whole
model. The output is written atomically and only after every weight loaded;
nothing in the legacy file is evaluated.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from parallel_keras.cli import errors

_OUTPUT_SUFFIXES = (".weights.h5", ".keras")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="Convert a Keras 2 (multi_gpu_model) HDF5 file to .weights.h5 or .keras.",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("legacy_file", help="The Keras 2 `.h5`/`.hdf5` file.")
    parser.add_argument(
        "--template",
        required=True,
        help="module:function (or path/to/file.py:function) returning the template model.",
    )
    parser.add_argument(
        "-o", "--output", required=True, help="Output path ending in .weights.h5 or .keras."
    )
    parser.add_argument(
        "--skip-mismatch",
        action="store_true",
        help="Skip template layers whose weight shapes differ from the file's "
        "(at least one layer must load); otherwise a mismatch is an error.",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace OUT if it exists (otherwise an existing OUT is an error).",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    """Converts; prints one line on success.

    The output path, the input file and the template spec are checked
    first, so a typo fails before the template is built or any weight
    loaded, and nothing is written: those are usage errors (exit 2). A
    template function that raises, or legacy weights that do not fit it, is
    a failed conversion (exit 1); nothing is written then either.

    Raises:
        errors.UsageError: A bad -o, input file or --template.
        errors.CommandFailed: The template or the loading failed.
    """
    problem = _check_output(args.output, args.overwrite)
    if problem:
        raise errors.UsageError(problem)
    from parallel_keras import quiet

    # The template's module may import TensorFlow: quiet it first.
    quiet.quiet_tensorflow(verbose=bool(getattr(args, "verbose", False)))
    from parallel_keras.saving import files  # h5py only

    with errors.raised_as(errors.UsageError, ValueError):
        files.describe(args.legacy_file)
        build = _load_function(args.template)
    # TensorFlow loads only now, so `--help` stays fast.
    import keras

    from parallel_keras.saving import atomic, legacy

    try:
        template = build()
    # The user's function may raise anything; each becomes one error line.
    except Exception as error:  # noqa: BLE001
        raise errors.CommandFailed(
            f"--template {args.template} raised {type(error).__name__}: {error}. "
            "The function must build and return the template model with no "
            "arguments; fix it, or point --template at one that does. "
            f"Nothing was written to {args.output}."
        ) from error
    if not isinstance(template, keras.Model):
        raise errors.UsageError(
            f"--template must name a function returning a keras.Model. "
            f"Received: {args.template} returned {type(template).__name__}. "
            "Make it `return model`, or point --template at the function that does."
        )
    skip_mismatch = bool(getattr(args, "skip_mismatch", False))
    try:
        loaded = legacy.load_legacy_weights(template, args.legacy_file, skip_mismatch=skip_mismatch)
    except (ValueError, OSError) as error:
        # The library's advice names its argument; here the flag does it.
        raise errors.CommandFailed(
            str(error).replace("pass skip_mismatch=True", "pass --skip-mismatch")
        ) from error
    with errors.raised_as(errors.CommandFailed, ValueError, OSError):
        if args.output.endswith(".keras"):
            atomic.save_model(template, args.output)
        else:
            atomic.save_weights(template, args.output)
    print(
        f"Converted {args.legacy_file} -> {args.output}: "
        f"{len(loaded)} layers into {template.name!r}."
    )
    return errors.EXIT_OK


def _check_output(output: str, overwrite: bool) -> str | None:
    """The problem with `-o`, or None; no TensorFlow, nothing written."""
    if not output.endswith(_OUTPUT_SUFFIXES):
        return (
            "The output must end in .weights.h5 (weights) or .keras (whole "
            f"model). Received: -o {output}. Use e.g. "
            f"-o {os.path.splitext(output)[0]}.keras."
        )
    if os.path.exists(output) and not os.path.isdir(output) and not overwrite:
        return (
            "convert does not replace an existing file unless asked. "
            f"Received: -o {output}, which exists. Pass --overwrite to "
            "replace it, or choose another -o."
        )
    from parallel_keras.saving import paths

    try:
        paths.check_output_path(output, argument="-o", what="convert")
    except (ValueError, PermissionError) as error:
        return str(error)
    return None


def _load_function(spec: str):
    module_name, _, function_name = spec.rpartition(":")
    if not module_name or not function_name:
        raise ValueError(
            "--template takes module:function. Received: "
            f"--template {spec}. Example: --template my_project.models:build_model."
        )
    if module_name.endswith(".py"):
        location = importlib.util.spec_from_file_location("template_module", module_name)
        if location is None or location.loader is None or not os.path.exists(module_name):
            raise ValueError(
                f"--template names a file that does not exist. Received: "
                f"--template {spec} ({module_name!r} not found from "
                f"{os.getcwd()!r}). Check the path, or use module:function."
            )
        module = importlib.util.module_from_spec(location)
        try:
            location.loader.exec_module(module)
        except Exception as error:
            raise ValueError(
                f"--template file {module_name!r} failed to import: "
                f"{type(error).__name__}: {error}. Fix the file, then run again."
            ) from error
    else:
        sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            raise ValueError(
                f"--template names a module Python cannot find: {error}. "
                f"Received: --template {spec}, searched from {os.getcwd()!r} "
                "and sys.path. Run from the folder that holds the module, "
                "install its package, or pass path/to/file.py:function."
            ) from error
        # The user's module may raise anything while it is imported.
        except Exception as error:
            raise ValueError(
                f"--template module {module_name!r} failed to import: "
                f"{type(error).__name__}: {error}. Fix the module, then run again."
            ) from error
    function = getattr(module, function_name, None)
    if not callable(function):
        available = sorted(
            name
            for name, value in vars(module).items()
            if callable(value)
            and not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__
        )
        raise ValueError(
            f"--template names no function. Received: {spec} ({module_name} "
            f"has no callable {function_name!r}). Functions it defines: "
            f"{available[:10] or 'none'}. Pass --template "
            f"{module_name}:<one of them>."
        )
    return function
