# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/legacy_interfaces.py: Keras 2's argument-renaming decorators."""

from __future__ import annotations

import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import legacy_interfaces
from tests.migrate.helpers import changes, check_flag

# A layer copied from Keras 2's source (a spectral-normalised Dense).
_LAYER = """\
import numpy as np
from keras.legacy import interfaces
from keras.layers import Dense


class DenseSN(Dense):
    @interfaces.legacy_dense_support
    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)


out = DenseSN(3, kernel_initializer='ones')(np.ones((2, 4), 'float32'))
"""


def test_legacy_support_decorators_and_their_import_go_and_the_layer_runs():
    namespace: dict = {}
    with pytest.raises(ImportError):
        exec(_LAYER, namespace)  # noqa: S102
    result = migrate.migrate_source(_LAYER)
    assert not result.report.flags, result.report.flags
    assert "interfaces" not in result.migrated
    assert [line for line, _ in changes(result, legacy_interfaces.RULE)] == [8]  # the def
    assert migrate.migrate_source(result.migrated).migrated == result.migrated
    exec(result.migrated, namespace)  # noqa: S102
    assert namespace["out"].numpy().tolist() == [[4.0] * 3] * 2
    # Imported and never used (a module that only kept the import): it goes too.
    unused = "from keras.legacy import interfaces\nimport keras\n"
    assert migrate.migrate_source(unused).migrated == "import keras\n"


def test_another_use_of_interfaces_keeps_the_import_flagged():
    source = "from keras.legacy import interfaces\nx = interfaces.generate_legacy_interface\n"
    result = check_flag(source, "drop the @interfaces.legacy_*")
    assert "from keras.legacy import interfaces" in result.migrated
