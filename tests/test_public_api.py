"""The public API is what parallel_keras exports, each name documented."""

import inspect

import pytest

import parallel_keras


@pytest.mark.parametrize("name", parallel_keras.__all__)
def test_every_export_resolves_and_is_documented(name):
    value = getattr(parallel_keras, name)
    assert inspect.getdoc(value), f"{name} has no docstring"
    assert name in dir(parallel_keras)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'multi_gpu_models'"):
        parallel_keras.multi_gpu_models  # noqa: B018
