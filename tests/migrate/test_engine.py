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


@pytest.mark.parametrize(
    "backend_import",
    ["from keras import backend as K", "import keras.backend as K", "from keras import backend"],
)
def test_keras2s_backend_import_goes_once_every_use_is_rewritten(backend_import):
    name = "K" if " as K" in backend_import else "backend"
    source = (
        "import numpy as np\n"
        f"{backend_import}\n"
        "\n"
        f"flat = {name}.batch_flatten(np.ones((2, 3, 4), 'float32'))\n"
    )
    result = migrate.migrate_source(source, "train.py")

    assert backend_import not in result.migrated
    assert f"{name}." not in result.migrated
    removed = [c.message for c in result.report.changes if c.message.startswith("removed `")]
    assert len(removed) == 1 and "backend" in removed[0], removed
    namespace: dict = {}
    exec(result.migrated, namespace)
    assert namespace["flat"].shape == (2, 12)
    again = migrate.migrate_source(result.migrated, "train.py")
    assert again.migrated == result.migrated and not again.report.changes


def test_keras2s_backend_import_stays_while_a_use_is_left():
    source = (
        "import numpy as np\n"
        "from keras import backend as K\n"
        "\n"
        "flat = K.batch_flatten(np.ones((2, 3, 4), 'float32'))\n"
        "K.clear_session()\n"
    )
    migrated = migrate.migrate_source(source, "train.py").migrated

    assert "from keras import backend as K\n" in migrated
    assert "K.clear_session()" in migrated


def test_a_rewritten_line_longer_than_the_file_is_split_and_means_the_same():
    long_line = "kept = 'a line the file had, as long as its longest: the limit of this file'"
    source = (
        "import numpy as np\n"
        "from keras import backend as K\n"
        f"{long_line}\n"
        "\n"
        "def flat(x):\n"
        "    if x is not None:\n"
        "        y = K.batch_flatten(K.temporal_padding(x, (1, 2)))\n"
        "        z = K.batch_flatten(K.temporal_padding(K.temporal_padding(x, (1, 2)), (3, 0)))\n"
        "    return y, z\n"
        "\n"
        "x3 = np.ones((2, 3, 4), 'float32')\n"
        "out, out2 = flat(x3)\n"
        "short = K.batch_flatten(out)\n"
        "label = f'{K.batch_flatten(K.temporal_padding(K.temporal_padding(x3, (1, 2)), (3, 0))).shape}'\n"
    )
    limit = max(len(line) for line in source.splitlines()[:-1])
    result = migrate.migrate_source(source, "flat.py")
    lines = result.migrated.splitlines()

    # Split one argument per line, one level deeper, up to the file's limit.
    assert "        y = parallel_keras.compat.batch_flatten(" in lines
    assert "            parallel_keras.compat.temporal_padding(x, (1, 2))" in lines
    # A rewritten line within the limit stays whole; so does the f-string's
    # call (a line break in its braces is a syntax error before Python 3.12).
    assert "short = parallel_keras.compat.batch_flatten(out)" in lines
    assert long_line in lines
    assert [line for line in lines if len(line) > limit] == [lines[-1]], result.migrated
    again = migrate.migrate_source(result.migrated, "flat.py")
    assert again.migrated == result.migrated and not again.report.changes
    namespace: dict = {}
    exec(result.migrated, namespace)
    assert namespace["out"].shape == (2, 24)
    assert float(namespace["out"].numpy().sum()) == 2 * 3 * 4
    assert namespace["out2"].shape == (2, 36)
    assert float(namespace["out2"].numpy().sum()) == 2 * 3 * 4
    assert namespace["label"] == "(2, 36)"
