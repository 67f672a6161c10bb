# SPDX-License-Identifier: Apache-2.0
"""The public API: what parallel_keras exports, and every name the docs use.

The documented names are resolved against the INSTALLED wheel, built from
this checkout and installed into a temporary folder, in a process that does
not see the source tree: a module missing from the wheel, or a name that
only resolves because a test imported its submodule first, fails here.
"""

import doctest
import importlib
import inspect
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import keras
import pytest
from helpers import keras_has_placement

import parallel_keras

REPO = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "notebooks").glob("*.ipynb")),
    *sorted((REPO / "examples").glob("*.py")),
]
_NAME = re.compile(
    r"(?P<context>(?:-m|import|from)\s+)?\b(?P<name>parallel_keras(?:\.[A-Za-z_]\w*)+)"
)


def documented_names() -> dict[str, bool]:
    """Dotted `parallel_keras...` names in the docs -> used as a module path."""
    names: dict[str, bool] = {}
    for path in DOCUMENTS:
        text = path.read_text()
        if path.suffix == ".ipynb":
            text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
        for match in _NAME.finditer(text):
            name = match["name"]
            names[name] = names.get(name, False) or bool(match["context"])
    return names


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> pathlib.Path:
    """The package built as a wheel and installed into a temporary folder."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    # A copy, so the build's scratch files stay out of the checkout.
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "parallel_keras",
        source / "parallel_keras",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(root / "dist"), str(source)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (wheel,) = (root / "dist").glob("parallel_keras-*.whl")
    target = root / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return target


@pytest.mark.subprocess
def test_every_documented_name_resolves_in_the_installed_wheel(installed_wheel, tmp_path):
    names = documented_names()
    assert "parallel_keras.multi_worker.initialize" in names  # The scan works.
    code = f"""
import importlib, json, sys
import parallel_keras
from parallel_keras import _internals
assert parallel_keras.__file__.startswith({str(installed_wheel)!r}), parallel_keras.__file__
unresolved = []
for name, as_module in {names!r}.items():
    value = parallel_keras
    try:
        for part in name.split(".")[1:]:
            value = getattr(value, part)
    except _internals.PlacementNeedsNewerKeras:
        pass  # Device placement, refused at first use below Keras 3.11.
    except AttributeError as error:
        # `import x.y` / `python -m x.y` import the module themselves.
        try:
            if not as_module:
                raise
            importlib.import_module(name)
        except Exception:
            unresolved.append(f"{{name}}: {{error}}")
print(json.dumps(unresolved))
"""
    process = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # Not the checkout: only the installed wheel is importable.
        env={**os.environ, "PYTHONPATH": str(installed_wheel), "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout.splitlines()[-1]) == []


# Device placement's public names: below Keras 3.11 their first use raises
# PlacementNeedsNewerKeras (tests/internals/test_placement.py).
_PLACEMENT_EXPORTS = frozenset(
    {"LayerCallPlacement", "clear_placement", "device", "place_branches", "placement"}
)


def _refused_here(name: str) -> bool:
    return name in _PLACEMENT_EXPORTS and not keras_has_placement()


@pytest.mark.parametrize("name", parallel_keras.__all__)
def test_every_export_resolves_and_is_documented(name):
    if _refused_here(name):
        from parallel_keras import _internals

        with pytest.raises(_internals.PlacementNeedsNewerKeras, match=keras.__version__):
            getattr(parallel_keras, name)
        return
    value = getattr(parallel_keras, name)
    assert value is not None
    assert inspect.getdoc(value), f"{name} has no docstring"


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'multi_gpu_models'"):
        parallel_keras.multi_gpu_models  # noqa: B018


def _docstring_examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    modules = sorted(
        path.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
        for path in (REPO / "parallel_keras").rglob("*.py")
        if not path.name.startswith("__main__")
    )
    tests = []
    for module_name in modules:
        module_name = module_name.removesuffix(".__init__")
        if module_name.startswith("parallel_keras.cli"):
            continue  # Entry points; no examples.
        if module_name.startswith("parallel_keras.device_placement") and not (
            keras_has_placement()
        ):
            continue  # Refused at import below Keras 3.11 (PlacementNeedsNewerKeras).
        module = importlib.import_module(module_name)
        for test in finder.find(module, module_name):
            if test.examples and test.name.startswith(module_name):
                tests.append(test)
    return {test.name: test for test in tests}


_EXAMPLES = _docstring_examples()


@pytest.mark.parametrize("name", sorted(_EXAMPLES))
def test_docstring_example_runs(name):
    """Each `Example:` runs, on the 4 simulated CPU devices of conftest.py."""
    test = _EXAMPLES[name]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    output = []
    runner.run(test, out=output.append, clear_globs=True)
    assert runner.failures == 0, "".join(output)


PUBLIC_PACKAGES = (
    "parallel_keras",
    "parallel_keras.compat",
    "parallel_keras.migrate",
    "parallel_keras.multi_worker",
    "parallel_keras.testing",
)
INTERNAL_PACKAGES = (
    "parallel_keras.cli",
    "parallel_keras.cluster",
    "parallel_keras.data_parallel",
    "parallel_keras.device_placement",
    "parallel_keras.saving",
)


@pytest.mark.parametrize("package_name", PUBLIC_PACKAGES)
def test_every_public_package_exports_one_way_from_its_stub(package_name):
    package = importlib.import_module(package_name)
    stub = pathlib.Path(package.__file__).with_suffix(".pyi")
    listed = set(re.findall(r"^from \S+ import (\w+) as \1$", stub.read_text(), re.M))
    assert listed and set(package.__all__) == listed
    for name in package.__all__:
        if package_name == "parallel_keras" and _refused_here(name):
            continue
        assert getattr(package, name) is not None
        assert name in dir(package)


def test_dir_of_the_package_lists_its_public_names_only():
    import parallel_keras

    listed = dir(parallel_keras)
    assert listed == sorted({*parallel_keras.__all__, "__version__"})
    assert not {"annotations", "importlib", "_exports"} & set(listed)


@pytest.mark.parametrize("package_name", INTERNAL_PACKAGES)
def test_internal_packages_export_nothing(package_name):
    if package_name == "parallel_keras.device_placement" and not keras_has_placement():
        pytest.skip(f"Keras {keras.__version__} has no device placement (3.11+)")
    package = importlib.import_module(package_name)
    assert getattr(package, "__all__", []) == []


def test_each_public_name_is_at_one_path():
    paths_of = {}
    for package_name in PUBLIC_PACKAGES:
        package = importlib.import_module(package_name)
        for name in package.__all__:
            if package_name == "parallel_keras" and _refused_here(name):
                continue
            value = getattr(package, name)
            if inspect.ismodule(value):
                continue  # `parallel_keras.testing` is a package, reached by its name.
            paths_of.setdefault(id(value), []).append(f"{package_name}.{name}")
    assert [paths for paths in paths_of.values() if len(paths) > 1] == []


@pytest.mark.parametrize("name", ["BackupAndRestore", "notebook_launcher", "write_path"])
def test_the_0_1_0_multi_worker_spellings_still_work_with_a_deprecation_warning(name):
    from parallel_keras import multi_worker

    with pytest.warns(DeprecationWarning, match=f"use parallel_keras.{name}"):
        value = getattr(multi_worker, name)
    assert value is getattr(parallel_keras, name)
    assert name not in multi_worker.__all__
