# SPDX-License-Identifier: Apache-2.0
"""The engine: a rule's split statement is seen by the later rules, and
notes survive a second run (running migrate twice changes nothing).
"""

from __future__ import annotations

import itertools

import pytest

from parallel_keras import migrate
from parallel_keras.migrate import engine

# Names Keras 2 scripts imported next to multi_gpu_model, each handled by a
# different rule (module moves, removed names, kept names).
_UTILS_NAMES = ("np_utils", "plot_model", "to_categorical", "Sequence", "generic_utils")
_MODULES = ("keras.utils", "tensorflow.keras.utils")


def _combos():
    for module in _MODULES:
        for size in (1, 2):
            for others in itertools.permutations(_UTILS_NAMES, size):
                for position in range(size + 1):
                    names = list(others)
                    names.insert(position, "multi_gpu_model")
                    yield f"from {module} import {', '.join(names)}\n"


@pytest.mark.parametrize("line", sorted(set(_combos())))
def test_import_combo_is_a_fixed_point(line):
    first = migrate.migrate_source(line)
    second = migrate.migrate_source(first.migrated)

    assert second.migrated == first.migrated
    assert not second.report.changes
    # A name that a rule rewrites alone is rewritten the same way next to
    # multi_gpu_model.
    module, names = line[len("from ") :].rstrip().split(" import ")
    for name in names.split(", "):
        alone = migrate.migrate_source(f"from {module} import {name}\n")
        if alone.changed:
            for text in alone.migrated.splitlines():
                assert text in first.migrated.splitlines(), (line, first.migrated)


def test_np_utils_next_to_multi_gpu_model_is_rewritten_in_one_run():
    result = migrate.migrate_source(
        "from keras.utils import multi_gpu_model, np_utils\n"
        "y = np_utils.to_categorical([0, 1], 2)\n"
    )

    assert result.migrated == (
        "from keras import utils as np_utils\n"
        "from parallel_keras import multi_gpu_model\n"
        "y = np_utils.to_categorical([0, 1], 2)\n"
    )
    assert {change.line for change in result.report.changes} == {1}


def test_a_note_with_a_long_path_is_recognized_by_the_second_run():
    path = "/data/experiments/2018-kaggle-rossmann/checkpoints/weights-improvement-best.h5"
    statement = engine.cst.parse_statement("x = 1\n")
    note = f"check the file {path} (written by Keras 2, loaded as-is)"

    once = engine._with_notes(statement, [note])
    twice = engine._with_notes(once, [note])

    comments = [line.comment.value for line in once.leading_lines]
    assert any(path in text for text in comments), comments
    assert len(twice.leading_lines) == len(once.leading_lines)


def test_imports_the_rewrites_left_unused_are_removed_and_others_stay():
    source = (
        '"""Doc."""\n'
        "from __future__ import print_function\n"
        "import os\n"
        "from scipy import misc\n"
        "import numpy as np\n"
        "import unused_before\n"
        "\n"
        "small = misc.imresize(np.zeros((4, 4)), (2, 2))\n"
    )
    result = migrate.migrate_source(source, "train.py")
    assert result.migrated == (
        '"""Doc."""\n'
        "from __future__ import print_function\n"
        "import os\n"
        "import numpy as np\n"
        "import unused_before\n"
        "import parallel_keras.compat.scipy_misc\n"
        "\n"
        "small = parallel_keras.compat.scipy_misc.imresize(np.zeros((4, 4)), (2, 2))\n"
    )
    removed = [c for c in result.report.changes if c.message.startswith("removed `")]
    assert [(c.line, c.message) for c in removed] == [
        (4, "removed `from scipy import misc`: the rewrites left it unused")
    ]
    again = migrate.migrate_source(result.migrated, "train.py")
    assert again.migrated == result.migrated and not again.report.changes
    namespace: dict = {}
    exec(result.migrated.replace("import unused_before\n", ""), namespace)
    assert namespace["small"].shape == (2, 2)
