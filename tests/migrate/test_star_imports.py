# SPDX-License-Identifier: Apache-2.0
"""Names a file gets from a project module's `from <module> import *` (migrate/project.py).

crnn_ocr's train.py does `from utils import *`, and utils.py does `from keras
import optimizers`: `optimizers.SGD(lr=...)` in train.py is Keras's, and must
be rewritten as if train.py had imported it itself.
"""

from __future__ import annotations

import textwrap

import keras
import numpy as np

from parallel_keras import migrate


def _migrate(tmp_path, files: dict[str, str]) -> dict:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    found = migrate.find_python_files([str(tmp_path)])
    project = migrate.scan_project(found)
    return {relative: migrate.migrate_file(path, relative, project) for path, relative in found}


def test_keras_module_from_a_star_import_is_rewritten_and_runs(tmp_path):
    results = _migrate(
        tmp_path,
        {
            "utils.py": """\
            from keras import optimizers
            from keras import backend as K
            """,
            # As crnn_ocr imports it: in its `if __name__ == '__main__':` block.
            "train.py": """\
            if __name__ == "__main__" or True:
                from utils import *

            optimizer = optimizers.SGD(lr=0.5, momentum=0.0)
            scale = K.epsilon()
            """,
        },
    )
    migrated = results["train.py"].migrated
    assert "lr=" not in migrated and "learning_rate=0.5" in migrated
    namespace: dict = {}
    (tmp_path / "utils.py").write_text(results["utils.py"].migrated)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        exec(migrated, namespace)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("utils", None)
    optimizer = namespace["optimizer"]
    assert float(keras.ops.convert_to_numpy(optimizer.learning_rate)) == 0.5
    # One SGD step with that learning rate: w - 0.5 * grad.
    w = keras.Variable(np.array([1.0, 2.0], dtype="float32"))
    optimizer.apply_gradients([(keras.ops.convert_to_tensor([1.0, 1.0]), w)])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(w), [0.5, 1.5])


def test_a_name_the_file_binds_itself_is_not_taken_from_the_star_import(tmp_path):
    results = _migrate(
        tmp_path,
        {
            "utils.py": "from keras import optimizers\n",
            "train.py": """\
            from utils import *

            def make(optimizers):
                return optimizers.SGD(lr=0.5)
            """,
        },
    )
    assert "lr=0.5" in results["train.py"].migrated
