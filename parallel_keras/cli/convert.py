"""`parallel-keras convert`: a Keras 2 multi-GPU HDF5 file to a Keras 3 file.

    parallel-keras convert LEGACY.h5 --template module:function -o OUT

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
    parser.set_defaults(run=run)


def run(args) -> int:
    """Converts; prints one line on success, an error on stderr otherwise."""
    if not args.output.endswith(_OUTPUT_SUFFIXES):
        return _fail(
            "The output must end in .weights.h5 (weights) or .keras (whole "
            f"model). Received: -o {args.output}."
        )
    try:
        build = _load_function(args.template)
    except (ValueError, ImportError, AttributeError) as error:
        return _fail(str(error))
    # TensorFlow loads only now, so `--help` stays fast.
    from parallel_keras.saving import atomic  # pylint: disable=g-import-not-at-top
    from parallel_keras.saving import legacy  # pylint: disable=g-import-not-at-top
    import keras  # pylint: disable=g-import-not-at-top

    template = build()
    if not isinstance(template, keras.Model):
        return _fail(
            f"--template must name a function returning a keras.Model. "
            f"Received: {args.template} returned {type(template).__name__}."
        )
    try:
        loaded = legacy.load_legacy_weights(template, args.legacy_file)
        if args.output.endswith(".keras"):
            atomic.save_model(template, args.output)
        else:
            atomic.save_weights(template, args.output)
    except ValueError as error:
        return _fail(str(error))
    print(
        f"Converted {args.legacy_file} -> {args.output}: "
        f"{len(loaded)} layers into {template.name!r}."
    )
    return 0


def _load_function(spec: str):
    module_name, _, function_name = spec.rpartition(":")
    if not module_name or not function_name:
        raise ValueError(
            "--template takes module:function. Received: "
            f"--template {spec}. Example: --template my_project.models:build_model."
        )
    if module_name.endswith(".py"):
        location = importlib.util.spec_from_file_location("template_module", module_name)
        if location is None or not os.path.exists(module_name):
            raise ValueError(f"--template file {module_name!r} does not exist.")
        module = importlib.util.module_from_spec(location)
        location.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(
            f"--template names no function. Received: {spec} ({module_name} "
            f"has no callable {function_name!r})."
        )
    return function


def _fail(message: str) -> int:
    print(f"parallel-keras convert: error: {message}", file=sys.stderr)
    return 1
